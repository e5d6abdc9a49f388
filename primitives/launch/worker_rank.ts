/**
 * Entry point of every rank of a workers transport: joins the group as the transport's descriptor
 * says, builds the Communicator, runs the user's function and reports to the launcher.
 * @module
 */

import { calibrated } from "./calibration.ts";
import { Communicator } from "../communicator/communicator.ts";
import { PeerFailedError } from "../errors.ts";
import { GpuDevice } from "../memory/gpu_device.ts";
import { GpuThreads } from "./gpu_teardown.ts";
import { PROGRESS_SCRATCH_FROM, RankHeap } from "../memory/heap.ts";
import { RankMemory } from "../memory/rank_memory.ts";
import { WEB_TRANSPORTS } from "../registry.ts";
import type { Transport } from "../transports/transport.ts";
import { joinHierarchy } from "../transports/hierarchy.ts";
import { startProgressThread } from "../communicator/progress_thread.ts";
import type { ProgressRankInit } from "./progress_rank.ts";
import { rankFunction, type RankProgram, type RankReport, runRank } from "./rank_report.ts";
import { loadRuntime, type RankRuntime } from "./runtime.ts";

/**
 * A process's part of a hierarchical group: ranks `host × threads + t` of `hosts × threads`,
 * meeting the other processes' ranks at `mesh`.
 */
export interface HierarchyPlan {
  /** Processes (or hosts) in the group. */
  hosts: number;
  /** Ranks per process. */
  threads: number;
  /** This process's index. */
  host: number;
  /** Where the processes meet (rank 0's address and port) and the run's token. */
  mesh: { masterAddr: string; masterPort: number; token: string; bind?: string };
  /** Ranks this machine runs in all, when the launcher says (every process's threads). */
  machineRanks?: number;
}

/** Launcher → rank: everything a rank needs to join. */
export interface RankInit extends RankProgram {
  rank: number;
  /** Open a WebGPU device for this rank. */
  gpu: boolean;
  /** Every rank's heap memory. */
  heaps: WebAssembly.Memory[];
  /** This worker among its process's workers (its heap in `heaps`). */
  slot: number;
  /** What the transport's descriptor prepared for this rank (a hierarchy: the shm setup). */
  handed: unknown;
  /** The CPU this rank runs on (`GroupOptions.placement`), if it is bound. */
  cpu?: number;
  /** This rank is one of its process's ranks of a hierarchical group (hierarchy.ts). */
  hierarchy?: HierarchyPlan;
  /** The rank's communicator runs on a progress thread of its own (progress_rank.ts). */
  progress?: true;
}

/** Launcher → rank: another rank failed. */
interface AbortMessage {
  type: "abort";
  failedRank: number;
  reason: string;
}

/** Rank → launcher: the port rank 0 of a hierarchical group picked (its host's ranks need it). */
export interface PortMessage {
  type: "port";
  port: number;
}

const scope = self as unknown as {
  onmessage: (e: MessageEvent<RankInit | AbortMessage>) => void;
  postMessage(msg: RankReport | PortMessage): void;
};

let transport: Transport | undefined;
let gpu: GpuDevice | undefined;

scope.onmessage = ({ data }) => {
  if (data.type === "abort") transport?.abort(new PeerFailedError(data.failedRank, data.reason));
  else {
    const connect = async () => {
      const runtime = await loadRuntime(data.runtime);
      runtime.start?.(data.cpu);
      // With a progress thread the rank's buffers and the thread's scratch share the heap.
      const heap = new RankHeap(
        data.heaps[data.slot],
        data.progress && { to: PROGRESS_SCRATCH_FROM },
      );
      if (data.gpu) {
        GpuThreads.record(data.gpuThreads, data.slot);
        gpu = await GpuDevice.open();
      }
      const { rank, handed, heaps, timeoutMs } = data;
      if (data.progress) return await onProgressThread(data, heap);
      transport = data.hierarchy
        ? await joinHostRank(data, data.hierarchy, heap, runtime)
        : WEB_TRANSPORTS.launchedAs(data.transport, "workers").join(rank, {
          handed,
          heaps,
          heap,
          timeoutMs,
        });
      const comm = new Communicator(transport, new RankMemory(heap, gpu));
      return data.hierarchy ? calibrated(comm, transport) : comm;
    };
    runRank({
      connect,
      fn: () => rankFunction(data.module, data.entry),
      args: data.args,
      // The launcher may terminate this worker once it has reported: its device must be idle.
      release: async () => await gpu?.synchronize(),
    }, scope.postMessage);
  }
};

/** Rank `init.rank` of its group on a progress thread of its own: the rank's side of it. */
function onProgressThread(init: RankInit, heap: RankHeap): Promise<Communicator> {
  const worker = new Worker(new URL("./progress_rank.ts", import.meta.url), { type: "module" });
  const { rank, transport, handed, heaps, slot, timeoutMs, runtime } = init;
  const join: ProgressRankInit = { rank, transport, handed, heaps, slot, timeoutMs, runtime };
  const facts = WEB_TRANSPORTS.launchedAs(transport, "workers");
  return startProgressThread(worker, join, facts, new RankMemory(heap));
}

/**
 * Joins rank `init.rank` of a hierarchical group: the mesh of the processes transport (which the
 * runtime links), then its host's group over the table's shared-memory transport.
 */
function joinHostRank(
  init: RankInit,
  h: NonNullable<RankInit["hierarchy"]>,
  heap: RankHeap,
  runtime: RankRuntime,
): Promise<Transport> {
  const connect = runtime.connect;
  if (!connect) {
    throw new TypeError(
      `Transport ${init.transport} links processes, which this rank's runtime cannot do`,
    );
  }
  return joinHierarchy({
    hosts: h.hosts,
    threads: h.threads,
    host: h.host,
    local: init.slot,
    intraHost: WEB_TRANSPORTS.sharedMemory(),
    handed: init.handed,
    heaps: init.heaps,
    heap,
    machineRanks: h.machineRanks,
    mesh: {
      ...h.mesh,
      timeoutMs: init.timeoutMs,
      // Rank 0 picked the port: its launcher starts the others with it.
      onListening: (port) => h.mesh.masterPort === 0 && scope.postMessage({ type: "port", port }),
    },
    connect: (o) => connect(init.transport, o),
  });
}
