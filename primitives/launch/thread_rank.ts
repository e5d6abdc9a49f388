/**
 * The worker behind the thread launcher (thread.ts): opens one WebGPU device, makes a group of
 * `size` logical ranks on it as the transport's descriptor says, runs the module's
 * `fn(comm, args)` for every rank at once (SPMD, like nccl-tests `-g N` in one thread) and reports
 * each rank's outcome to the launcher.
 * @module
 */

import { Communicator } from "../communicator/communicator.ts";
import { PeerFailedError } from "../errors.ts";
import { GpuDevice } from "../memory/gpu_device.ts";
import { createHeapMemory, RankHeap } from "../memory/heap.ts";
import { RankMemory } from "../memory/rank_memory.ts";
import { WEB_TRANSPORTS } from "../registry.ts";
import type { Transport } from "../transports/transport.ts";
import {
  failureReport,
  rankFunction,
  type RankProgram,
  type RankReport,
  runRank,
} from "./rank_report.ts";
import { loadRuntime } from "./runtime.ts";
import { GpuThreads } from "./gpu_teardown.ts";

/** Launcher → thread: everything the group needs. */
export interface ThreadInit extends RankProgram {
  /** Largest storage binding the kernels use (tests make it small). */
  maxBindingBytes?: number;
  /** Open a WebGPU device even where the transport needs none (for gpu or managed memory). */
  gpu?: boolean;
  /** What the transport is configured with (`GroupOptions.transportOptions`). */
  transportOptions?: unknown;
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

let transports: Transport[] = [];

scope.onmessage = ({ data }) => {
  // The ranks share one group: failing one fails the group.
  if (data.type === "kill") transports[0]?.abort(new PeerFailedError(data.rank, "it was killed"));
  else runGroup(data);
};

async function runGroup(init: ThreadInit): Promise<void> {
  let gpu: GpuDevice | undefined;
  try {
    (await loadRuntime(init.runtime)).start?.(undefined);
    const descriptor = WEB_TRANSPORTS.launchedAs(init.transport, "thread");
    if (descriptor.needsDevice || init.gpu) {
      GpuThreads.record(init.gpuThreads, 0);
      gpu = await GpuDevice.open({ maxBindingBytes: init.maxBindingBytes });
    }
    transports = descriptor.group({
      gpu,
      size: init.size,
      timeoutMs: init.timeoutMs,
      options: init.transportOptions,
    });
  } catch (err) {
    for (let rank = 0; rank < init.size; rank++) {
      scope.postMessage({ type: "error", ...failureReport(err), rank });
    }
    return;
  }
  const fn = rankFunction(init.module, init.entry);
  fn.catch(() => {}); // every rank awaits it, and reports its failure
  await Promise.all(transports.map((transport, rank) => {
    const connect = () =>
      Promise.resolve(
        new Communicator(
          transport,
          new RankMemory(new RankHeap(createHeapMemory()), gpu, transport.simulated?.arena),
        ),
      );
    return runRank(
      { connect, fn: () => fn, args: init.args },
      (r) => scope.postMessage({ ...r, rank }),
    );
  }));
  await gpu?.synchronize().catch(() => {});
}
