/**
 * The one registry: transports, the algorithms of every collective, and how `auto` picks one.
 * Tests, benchmarks and the CLI all read these tables, so adding an algorithm is one file plus
 * one line here.
 * @module
 */

import { allgatherRing } from "./collectives/allgather_ring.ts";
import { allgatherShmDirect } from "./collectives/allgather_shm_direct.ts";
import { allreduceRabenseifner } from "./collectives/allreduce_rabenseifner.ts";
import { allreduceRecursiveDoubling } from "./collectives/allreduce_recursive_doubling.ts";
import { allreduceRing } from "./collectives/allreduce_ring.ts";
import { allreduceShmDirect } from "./collectives/allreduce_shm_direct.ts";
import { bcastBinomial } from "./collectives/bcast_binomial.ts";
import { bcastScatterAllgather } from "./collectives/bcast_scatter_allgather.ts";
import { bcastShmDirect } from "./collectives/bcast_shm_direct.ts";
import {
  type AllgatherAlgorithm,
  type AllreduceAlgorithm,
  type BcastAlgorithm,
  type ReduceAlgorithm,
  type ReduceScatterAlgorithm,
  viaOutput,
} from "./collectives/context.ts";
import { reduceBinomial } from "./collectives/reduce_binomial.ts";
import { reduceScatterGather } from "./collectives/reduce_scatter_gather.ts";
import { reduceScatterRing } from "./collectives/reduce_scatter_ring.ts";
import { reduceScatterShmDirect } from "./collectives/reduce_scatter_shm_direct.ts";
import { reduceShmDirect } from "./collectives/reduce_shm_direct.ts";
import { shmSetupBytes } from "./transports/shm_layout.ts";
import type { MemoryKind, TransportName } from "./types.ts";

/** Collectives that have selectable algorithms. */
export type CollectiveName = "allreduce" | "bcast" | "reduce" | "allgather" | "reduceScatter";

/** Algorithms of every collective, by name. */
export const ALGORITHMS = {
  allreduce: {
    recursive_doubling: viaOutput(allreduceRecursiveDoubling),
    ring: viaOutput(allreduceRing),
    rabenseifner: viaOutput(allreduceRabenseifner),
    shm_direct: allreduceShmDirect,
  } as Record<string, AllreduceAlgorithm>,
  bcast: {
    binomial: bcastBinomial,
    scatter_allgather: bcastScatterAllgather,
    shm_direct: bcastShmDirect,
  } as Record<string, BcastAlgorithm>,
  reduce: {
    binomial: reduceBinomial,
    scatter_gather: reduceScatterGather,
    shm_direct: reduceShmDirect,
  } as Record<string, ReduceAlgorithm>,
  allgather: {
    ring: allgatherRing,
    shm_direct: allgatherShmDirect,
  } as Record<string, AllgatherAlgorithm>,
  reduceScatter: {
    ring: reduceScatterRing,
    shm_direct: reduceScatterShmDirect,
  } as Record<string, ReduceScatterAlgorithm>,
} as const;

/** Position of an algorithm in its collective's table (carried in call stamps). */
export function algorithmIndex(collective: CollectiveName, name: string): number {
  return Object.keys(ALGORITHMS[collective]).indexOf(name);
}

/** The algorithm at `index` of a collective's table (for messages about call stamps). */
export function algorithmName(kind: string, index: number): string | undefined {
  const table = ALGORITHMS[kind as CollectiveName];
  return table ? Object.keys(table)[index] : undefined;
}

/** What the rest of dccl needs to know about a transport: one row per transport. */
export interface TransportInfo {
  /** Memory kinds it carries directly (NCCL's `canConnect`). */
  memory: readonly MemoryKind[];
  /** The kind a run uses unless told (DESIGN.md: "best for the transport"). */
  bestMemory: MemoryKind;
  /** How its ranks start: workers of this process, or subprocesses. */
  launch: "workers" | "processes";
  /** Memory a rank costs beyond its buffers (its runtime), bytes; measured on this machine. */
  rankBytes: number;
  /** Memory a whole group shares, bytes. */
  groupBytes(size: number): number;
}

/** Every transport, by name (the one table tests, benchmarks and the CLI read). */
export const TRANSPORTS: Readonly<Record<TransportName, TransportInfo>> = {
  shm: {
    memory: ["host", "shared"],
    bestMemory: "shared",
    launch: "workers",
    rankBytes: 16 * 2 ** 20,
    groupBytes: shmSetupBytes,
  },
  worker: {
    memory: ["host", "shared"],
    bestMemory: "host",
    launch: "workers",
    rankBytes: 16 * 2 ** 20,
    groupBytes: () => 0,
  },
  ws: {
    memory: ["host", "shared"],
    bestMemory: "host",
    launch: "processes",
    rankBytes: 80 * 2 ** 20,
    groupBytes: () => 0,
  },
};

/** Transport names, in table order. */
export const TRANSPORT_NAMES = Object.keys(TRANSPORTS) as TransportName[];

/** Algorithms that only run where ranks share memory. */
export function algorithmNeedsSharedMemory(name: string): boolean {
  return name === "shm_direct";
}

/** Algorithm names of a collective that can run on `transport`. */
export function algorithmsFor(collective: CollectiveName, transport: TransportName): string[] {
  return Object.keys(ALGORITHMS[collective]).filter((a) =>
    transport === "shm" || !algorithmNeedsSharedMemory(a)
  );
}

/**
 * What `auto` picks, from crossovers measured on the 2-vCPU development machine with the harness
 * and `deno task compare` (README, "Algorithms"): on `shm` the direct algorithms win at every size;
 * on message transports recursive doubling wins below 512 KiB, Rabenseifner up to 4 MiB on
 * power-of-two groups, the ring above; binomial trees beat the scatter forms of bcast and reduce
 * at every size measured (1 float … 16 MiB, 2 and 4 ranks).
 */
export function autoAlgorithm(
  collective: CollectiveName,
  transport: TransportName,
  bytes: number,
  size: number,
): string {
  if (transport === "shm") return "shm_direct";
  switch (collective) {
    case "allreduce":
      if (bytes < 512 * 1024) return "recursive_doubling";
      return bytes < 4 * 1024 * 1024 && size > 2 && (size & (size - 1)) === 0
        ? "rabenseifner"
        : "ring";
    case "bcast":
    case "reduce":
      return "binomial";
    case "allgather":
    case "reduceScatter":
      return "ring";
  }
}
