/**
 * The worker behind `spawnThreadRanks`: opens one WebGPU device, makes a `gpu` group of `size`
 * logical ranks on it, runs the module's `fn(comm, args)` for every rank at once (SPMD, like
 * nccl-tests `-g N` in one thread) and reports each rank's outcome to the launcher.
 * @module
 */

import { Communicator } from "../communicator.ts";
import { PeerFailedError } from "../errors.ts";
import { GpuDevice } from "../memory/gpu_device.ts";
import { createHeapMemory, RankHeap } from "../memory/heap.ts";
import { RankMemory } from "../memory/rank_memory.ts";
import { GpuGroup } from "../transports/gpu.ts";
import { failureReport, type RankReport } from "./report.ts";

/** Launcher → thread: everything the group needs. */
export interface ThreadInit {
  type: "init";
  size: number;
  module: string;
  entry: string;
  args: unknown;
  timeoutMs: number;
  /** Largest storage binding the kernels use (tests make it small). */
  maxBindingBytes?: number;
}

/** Launcher → thread: fail rank `rank` as if it had died. */
interface KillMessage {
  type: "kill";
  rank: number;
}

/** Thread → launcher: one rank's outcome. */
export type ThreadReport = RankReport & { rank: number };

const scope = self as unknown as {
  onmessage: (e: MessageEvent<ThreadInit | KillMessage>) => void;
  postMessage(msg: ThreadReport): void;
};

let group: GpuGroup | undefined;

scope.onmessage = (e) => {
  const msg = e.data;
  if (msg.type === "kill") group?.abort(new PeerFailedError(msg.rank, "it was killed"));
  else runGroup(msg);
};

async function runGroup(init: ThreadInit): Promise<void> {
  let gpu: GpuDevice;
  try {
    gpu = await GpuDevice.open({ maxBindingBytes: init.maxBindingBytes });
    group = new GpuGroup(gpu, init.size, { timeoutMs: init.timeoutMs });
  } catch (err) {
    for (let rank = 0; rank < init.size; rank++) {
      scope.postMessage({ type: "error", ...failureReport(err), rank });
    }
    return;
  }
  const mod = await import(init.module);
  const fn = mod[init.entry];
  await Promise.all(group.transports.map(async (transport, rank) => {
    const comm = new Communicator(
      transport,
      new RankMemory(new RankHeap(createHeapMemory()), gpu),
    );
    try {
      if (typeof fn !== "function") {
        throw new TypeError(`Module ${init.module} has no exported function ${init.entry}`);
      }
      const result = await fn(comm, init.args);
      scope.postMessage({ type: "returned", rank });
      await comm[Symbol.asyncDispose]();
      scope.postMessage({ type: "done", result, rank });
    } catch (err) {
      await comm.abort(err).catch(() => {});
      scope.postMessage({ type: "error", ...failureReport(err), rank });
    }
  }));
  await gpu.synchronize().catch(() => {});
}
