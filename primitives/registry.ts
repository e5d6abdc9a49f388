/**
 * The one registry: transports, the algorithms of every collective, and how `auto` picks one.
 * Tests, benchmarks and the CLI all read these tables, so adding an algorithm is one file plus
 * one line here, and adding a transport one row (plus its launcher case).
 * @module
 */

import { allgatherGpuDirect } from "./collectives/allgather_gpu_direct.ts";
import { allgatherGpuRing } from "./collectives/allgather_gpu_ring.ts";
import { allgatherRing } from "./collectives/allgather_ring.ts";
import { allgatherShmDirect } from "./collectives/allgather_shm_direct.ts";
import { allreduceGpuDirect } from "./collectives/allreduce_gpu_direct.ts";
import { allreduceGpuRing } from "./collectives/allreduce_gpu_ring.ts";
import { allreduceRabenseifner } from "./collectives/allreduce_rabenseifner.ts";
import { allreduceRecursiveDoubling } from "./collectives/allreduce_recursive_doubling.ts";
import { allreduceRing } from "./collectives/allreduce_ring.ts";
import { allreduceShmDirect } from "./collectives/allreduce_shm_direct.ts";
import { bcastBinomial } from "./collectives/bcast_binomial.ts";
import { bcastGpuDirect } from "./collectives/bcast_gpu_direct.ts";
import { bcastGpuRing } from "./collectives/bcast_gpu_ring.ts";
import { bcastScatterAllgather } from "./collectives/bcast_scatter_allgather.ts";
import { bcastShmDirect } from "./collectives/bcast_shm_direct.ts";
import {
  type AllgatherAlgorithm,
  type AllreduceAlgorithm,
  type BcastAlgorithm,
  type Operand,
  type ReduceAlgorithm,
  type ReduceScatterAlgorithm,
  viaOutput,
} from "./collectives/context.ts";
import { reduceBinomial } from "./collectives/reduce_binomial.ts";
import { reduceGpuDirect } from "./collectives/reduce_gpu_direct.ts";
import { reduceGpuRing } from "./collectives/reduce_gpu_ring.ts";
import { reduceScatterGather } from "./collectives/reduce_scatter_gather.ts";
import { reduceScatterGpuDirect } from "./collectives/reduce_scatter_gpu_direct.ts";
import { reduceScatterGpuRing } from "./collectives/reduce_scatter_gpu_ring.ts";
import { reduceScatterRing } from "./collectives/reduce_scatter_ring.ts";
import { reduceScatterShmDirect } from "./collectives/reduce_scatter_shm_direct.ts";
import { reduceShmDirect } from "./collectives/reduce_shm_direct.ts";
import { STAGING } from "./collectives/staging.ts";
import { shmSetupBytes } from "./transports/shm_layout.ts";
import type { MemoryKind, Side, TransportName } from "./types.ts";

/** Collectives that have selectable algorithms. */
export type CollectiveName = "allreduce" | "bcast" | "reduce" | "allgather" | "reduceScatter";

/**
 * What an algorithm needs from a transport (and a transport offers, {@linkcode TransportInfo}):
 * point-to-point `messages` or `shared` access to every peer's heap (host buffers), ranks that
 * share one `device` (device buffers), or `staging` device buffers through the host.
 */
export type AlgorithmNeed = "messages" | "shared" | "device" | "staging";

/** The side of memory an algorithm with these needs works on. */
export function sideOf(need: AlgorithmNeed): Side {
  return need === "device" || need === "staging" ? "device" : "host";
}

/** One algorithm of a collective. */
export interface Algorithm<F> {
  /** Registry name (the CLI's `--algorithm`). */
  readonly name: string;
  /**
   * Runs one call. Its operands are what `needs` says: host views (`messages`, `shared`), device
   * views (`device`) or the buffers themselves (`staging`); the communicator passes those.
   */
  readonly run: F;
  /** What the transport must offer. */
  readonly needs: AlgorithmNeed;
  /** Position in its collective's table (call stamps carry it). */
  readonly index: number;
}

/**
 * A collective's algorithm table from `name: [run, needs]` entries, in that order. Each entry
 * takes its own kind of operand; the table holds them under one signature over every operand
 * kind (the communicator passes each the kind its `needs` say).
 */
function algorithms<F>(
  entries: Record<string, readonly [unknown, AlgorithmNeed]>,
): Record<string, Algorithm<F>> {
  return Object.fromEntries(
    Object.entries(entries).map((
      [name, [run, needs]],
      index,
    ) => [name, { name, run: run as F, needs, index }]),
  );
}

/** Algorithms of every collective, by name. */
export const ALGORITHMS = {
  allreduce: algorithms<AllreduceAlgorithm<Operand>>({
    recursive_doubling: [viaOutput(allreduceRecursiveDoubling), "messages"],
    ring: [allreduceRing, "messages"],
    rabenseifner: [viaOutput(allreduceRabenseifner), "messages"],
    shm_direct: [allreduceShmDirect, "shared"],
    gpu_direct: [allreduceGpuDirect, "device"],
    gpu_ring: [allreduceGpuRing, "device"],
    staged: [STAGING.allreduce.staged, "staging"],
    pipelined: [STAGING.allreduce.pipelined, "staging"],
  }),
  bcast: algorithms<BcastAlgorithm<Operand>>({
    binomial: [bcastBinomial, "messages"],
    scatter_allgather: [bcastScatterAllgather, "messages"],
    shm_direct: [bcastShmDirect, "shared"],
    gpu_direct: [bcastGpuDirect, "device"],
    gpu_ring: [bcastGpuRing, "device"],
    staged: [STAGING.bcast.staged, "staging"],
    pipelined: [STAGING.bcast.pipelined, "staging"],
  }),
  reduce: algorithms<ReduceAlgorithm<Operand>>({
    binomial: [viaOutput(reduceBinomial), "messages"],
    scatter_gather: [viaOutput(reduceScatterGather), "messages"],
    shm_direct: [reduceShmDirect, "shared"],
    gpu_direct: [reduceGpuDirect, "device"],
    gpu_ring: [reduceGpuRing, "device"],
    staged: [STAGING.reduce.staged, "staging"],
    pipelined: [STAGING.reduce.pipelined, "staging"],
  }),
  allgather: algorithms<AllgatherAlgorithm<Operand>>({
    ring: [allgatherRing, "messages"],
    shm_direct: [allgatherShmDirect, "shared"],
    gpu_direct: [allgatherGpuDirect, "device"],
    gpu_ring: [allgatherGpuRing, "device"],
    staged: [STAGING.allgather.staged, "staging"],
    pipelined: [STAGING.allgather.pipelined, "staging"],
  }),
  reduceScatter: algorithms<ReduceScatterAlgorithm<Operand>>({
    ring: [reduceScatterRing, "messages"],
    shm_direct: [reduceScatterShmDirect, "shared"],
    gpu_direct: [reduceScatterGpuDirect, "device"],
    gpu_ring: [reduceScatterGpuRing, "device"],
    staged: [STAGING.reduceScatter.staged, "staging"],
    pipelined: [STAGING.reduceScatter.pipelined, "staging"],
  }),
} as const;

/** The algorithm at `index` of a collective's table (for messages about call stamps). */
export function algorithmName(kind: string, index: number): string | undefined {
  const table = ALGORITHMS[kind as CollectiveName] as Record<string, { index: number }> | undefined;
  return table && Object.keys(table).find((name) => table[name].index === index);
}

/** What the rest of dccl needs to know about a transport: one row per transport. */
export interface TransportInfo {
  /** Memory kinds it carries (NCCL's `canConnect`), directly or staged through the host. */
  memory: readonly MemoryKind[];
  /** The kind a run uses unless told (DESIGN.md: "best for the transport"). */
  bestMemory: MemoryKind;
  /** How its ranks start: workers of this process, subprocesses, or logical ranks in one thread. */
  launch: "workers" | "processes" | "thread";
  /** What it offers algorithms (each algorithm states what it needs). */
  offers: readonly AlgorithmNeed[];
  /** Whether its ranks need a WebGPU device whatever their memory. */
  needsDevice: boolean;
  /**
   * Whether its waits block the rank's thread (shared-memory spins and sleeps): a collective
   * that runs on after its call returns must then finish before the next one begins.
   */
  blocking: boolean;
  /** Memory a rank costs beyond its buffers (its runtime), bytes; measured on this machine. */
  rankBytes: number;
  /** Memory a whole group shares, bytes. */
  groupBytes(size: number): number;
}

/** The process meshes (`ws`, `tcp`): one process per rank, messages between them. */
const PROCESS_MESH: TransportInfo = {
  memory: ["host", "shared", "gpu", "managed"],
  bestMemory: "host",
  launch: "processes",
  offers: ["messages", "staging"],
  needsDevice: false,
  blocking: false,
  rankBytes: 80 * 2 ** 20,
  groupBytes: () => 0,
};

/** Every transport, by name (the one table tests, benchmarks and the CLI read). */
export const TRANSPORTS: Readonly<Record<TransportName, TransportInfo>> = {
  shm: {
    memory: ["host", "shared", "gpu", "managed"],
    bestMemory: "shared",
    launch: "workers",
    offers: ["messages", "shared", "staging"],
    needsDevice: false,
    blocking: true,
    rankBytes: 16 * 2 ** 20,
    groupBytes: shmSetupBytes,
  },
  worker: {
    memory: ["host", "shared", "gpu", "managed"],
    bestMemory: "host",
    launch: "workers",
    offers: ["messages", "staging"],
    needsDevice: false,
    blocking: false,
    rankBytes: 16 * 2 ** 20,
    groupBytes: () => 0,
  },
  ws: PROCESS_MESH,
  tcp: PROCESS_MESH,
  gpu: {
    memory: ["host", "gpu", "managed"],
    bestMemory: "gpu",
    launch: "thread",
    offers: ["messages", "device"],
    needsDevice: true,
    blocking: false,
    rankBytes: 2 ** 20,
    groupBytes: () => 64 * 2 ** 20,
  },
};

/** Transport names, in table order. */
export const TRANSPORT_NAMES = Object.keys(TRANSPORTS) as TransportName[];

/** Memory kinds that live on a device (the rest are host memory). */
export const DEVICE_MEMORY: readonly MemoryKind[] = ["gpu", "managed"];

/**
 * The side a buffer of `memory` is used on over `transport`: device memory on the device, host
 * memory on the host, and managed memory wherever the transport's algorithms work (on the device
 * for `gpu`, on the host copy elsewhere, as a CPU touching managed memory would).
 */
export function sideFor(transport: TransportName, memory: MemoryKind): Side {
  if (memory === "gpu") return "device";
  if (memory === "managed" && TRANSPORTS[transport].offers.includes("device")) return "device";
  return "host";
}

/** Algorithm names of a collective that can run on `transport` with buffers on `side`. */
export function algorithmsFor(
  collective: CollectiveName,
  transport: TransportName,
  side: Side = "host",
): string[] {
  const offers = TRANSPORTS[transport].offers;
  return Object.values(ALGORITHMS[collective] as Record<string, Algorithm<unknown>>)
    .filter((a) => offers.includes(a.needs) && sideOf(a.needs) === side).map((a) => a.name);
}

/**
 * What `auto` picks, from crossovers measured with the harness and `deno task compare` (README,
 * "Algorithms"). Host buffers: on `shm` the direct algorithms win at every size; on message
 * transports recursive doubling wins below 512 KiB, Rabenseifner up to 4 MiB on power-of-two
 * groups, the ring above; binomial trees beat the scatter forms of bcast and reduce at every size
 * measured (1 float … 16 MiB, 2 and 4 ranks). Device buffers: on `gpu` the direct kernels (each
 * byte read once) beat the ring at every size; over host transports the pipelined staging wins
 * from 16 MiB (four segments or more; measured on an H100). Two `tcp` processes differ only in
 * where allreduce's ring takes over: from 1 MiB (measured with --algorithm; README "Algorithms").
 */
export function autoAlgorithm(
  collective: CollectiveName,
  transport: TransportName,
  bytes: number,
  size: number,
  side: Side = "host",
): string {
  if (side === "device") {
    if (transport === "gpu") return "gpu_direct";
    return bytes >= 16 * 1024 * 1024 ? "pipelined" : "staged";
  }
  if (transport === "shm") return "shm_direct";
  switch (collective) {
    case "allreduce": {
      const doublingBelow = transport === "tcp" && size === 2 ? 1024 * 1024 : 512 * 1024;
      if (bytes < doublingBelow) return "recursive_doubling";
      return bytes < 4 * 1024 * 1024 && size > 2 && (size & (size - 1)) === 0
        ? "rabenseifner"
        : "ring";
    }
    case "bcast":
    case "reduce":
      return "binomial";
    case "allgather":
    case "reduceScatter":
      return "ring";
  }
}
