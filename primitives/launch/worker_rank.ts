/**
 * Entry point of every rank of a workers transport: joins the group as the transport's descriptor
 * says, builds the Communicator, runs the user's function and reports to the launcher.
 * @module
 */

import { Communicator } from "../communicator/communicator.ts";
import { PeerFailedError } from "../errors.ts";
import { GpuDevice } from "../memory/gpu_device.ts";
import { RankHeap } from "../memory/heap.ts";
import { RankMemory } from "../memory/rank_memory.ts";
import { launchedAs } from "../registry.ts";
import type { Transport } from "../transports/transport.ts";
import { bindRankThread } from "./cpu_binding.ts";
import { rankFunction, type RankProgram, type RankReport, runRank } from "./report.ts";

/** Launcher → rank: everything a rank needs to join. */
export interface RankInit extends RankProgram {
  rank: number;
  /** Open a WebGPU device for this rank. */
  gpu: boolean;
  /** Every rank's heap memory. */
  heaps: WebAssembly.Memory[];
  /** What the transport's descriptor prepared for this rank. */
  handed: unknown;
  /** The CPU this rank runs on (cpu_binding.ts), if it is bound. */
  cpu?: number;
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

scope.onmessage = ({ data }) => {
  if (data.type === "abort") transport?.abort(new PeerFailedError(data.failedRank, data.reason));
  else {
    const connect = async () => {
      bindRankThread(data.cpu);
      const heap = new RankHeap(data.heaps[data.rank]);
      const gpu = data.gpu ? await GpuDevice.open() : undefined;
      const { rank, handed, heaps, timeoutMs } = data;
      transport = launchedAs(data.transport, "workers").join(rank, handed, heaps, heap, timeoutMs);
      return new Communicator(transport, new RankMemory(heap, gpu));
    };
    runRank(connect, () => rankFunction(data.module, data.entry), data.args, scope.postMessage);
  }
};
