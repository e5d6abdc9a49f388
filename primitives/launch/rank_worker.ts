/**
 * Entry point of every in-process rank: connects the transport, builds the Communicator, runs
 * the user's function and reports its result or error to the launcher.
 * @module
 */

import { Communicator } from "../communicator.ts";
import { PeerFailedError } from "../errors.ts";
import { GpuDevice } from "../memory/gpu_device.ts";
import { RankHeap } from "../memory/heap.ts";
import { RankMemory } from "../memory/rank_memory.ts";
import type { TransportName } from "../types.ts";
import { ShmTransport } from "../transports/shm.ts";
import type { ShmSetup } from "../transports/shm_layout.ts";
import type { Transport } from "../transports/transport.ts";
import { WorkerTransport } from "../transports/worker.ts";
import { failureReport, type RankReport } from "./report.ts";

/** Launcher → rank: everything a rank needs to join. */
export interface RankInit {
  type: "init";
  rank: number;
  size: number;
  transport: TransportName;
  module: string;
  entry: string;
  args: unknown;
  timeoutMs: number;
  /** Open a WebGPU device for this rank. */
  gpu: boolean;
  heaps: WebAssembly.Memory[];
  shm?: ShmSetup;
  ports: (MessagePort | undefined)[];
}

/** Launcher → rank: another rank failed. */
interface AbortMessage {
  type: "abort";
  failedRank: number;
  reason: string;
}

const scope = self as unknown as {
  onmessage: (e: MessageEvent<RankInit | AbortMessage>) => void;
  postMessage(msg: RankReport): void;
};

let transport: Transport | undefined;

scope.onmessage = (e) => {
  const msg = e.data;
  if (msg.type === "abort") transport?.abort(new PeerFailedError(msg.failedRank, msg.reason));
  else runRank(msg);
};

function connect(init: RankInit, heap: RankHeap): Transport {
  if (init.transport === "shm") {
    const eager = heap.alloc("f64", ShmTransport.EAGER_AREA_BYTES / 8);
    return new ShmTransport(init.rank, {
      ...init.shm!,
      heaps: init.heaps,
      eagerOffset: eager.byteOffset,
    }, {
      timeoutMs: init.timeoutMs,
    });
  }
  return new WorkerTransport(init.rank, init.ports, { timeoutMs: init.timeoutMs });
}

async function runRank(init: RankInit): Promise<void> {
  let comm: Communicator | undefined;
  try {
    const heap = new RankHeap(init.heaps[init.rank]);
    const gpu = init.gpu ? await GpuDevice.open() : undefined;
    transport = connect(init, heap);
    comm = new Communicator(transport, new RankMemory(heap, gpu));
    const mod = await import(init.module);
    const fn = mod[init.entry];
    if (typeof fn !== "function") {
      throw new TypeError(`Module ${init.module} has no exported function ${init.entry}`);
    }
    const result = await fn(comm, init.args);
    scope.postMessage({ type: "returned" });
    await comm[Symbol.asyncDispose]();
    scope.postMessage({ type: "done", result });
  } catch (err) {
    // Peers learn why at once (unless this rank failed because of one of them).
    await comm?.abort(err).catch(() => {});
    scope.postMessage({ type: "error", ...failureReport(err) });
  }
}
