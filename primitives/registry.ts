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

/**
 * What an algorithm needs from a transport (and a transport offers, {@linkcode TransportInfo}):
 * point-to-point `messages`, or `shared` access to every peer's heap.
 */
export type AlgorithmNeed = "messages" | "shared";

/** One algorithm of a collective. */
export interface Algorithm<F> {
  /** Registry name (the CLI's `--algorithm`). */
  readonly name: string;
  /** Runs one call. */
  readonly run: F;
  /** What the transport must offer. */
  readonly needs: AlgorithmNeed;
  /** Position in its collective's table (call stamps carry it). */
  readonly index: number;
}

/** A collective's algorithm table from `name: [run, needs]` entries, in that order. */
function algorithms<F>(entries: Record<string, [F, AlgorithmNeed]>): Record<string, Algorithm<F>> {
  return Object.fromEntries(
    Object.entries(entries).map((
      [name, [run, needs]],
      index,
    ) => [name, { name, run, needs, index }]),
  );
}

/** Algorithms of every collective, by name. */
export const ALGORITHMS = {
  allreduce: algorithms<AllreduceAlgorithm>({
    recursive_doubling: [viaOutput(allreduceRecursiveDoubling), "messages"],
    ring: [viaOutput(allreduceRing), "messages"],
    rabenseifner: [viaOutput(allreduceRabenseifner), "messages"],
    shm_direct: [allreduceShmDirect, "shared"],
  }),
  bcast: algorithms<BcastAlgorithm>({
    binomial: [bcastBinomial, "messages"],
    scatter_allgather: [bcastScatterAllgather, "messages"],
    shm_direct: [bcastShmDirect, "shared"],
  }),
  reduce: algorithms<ReduceAlgorithm>({
    binomial: [reduceBinomial, "messages"],
    scatter_gather: [reduceScatterGather, "messages"],
    shm_direct: [reduceShmDirect, "shared"],
  }),
  allgather: algorithms<AllgatherAlgorithm>({
    ring: [allgatherRing, "messages"],
    shm_direct: [allgatherShmDirect, "shared"],
  }),
  reduceScatter: algorithms<ReduceScatterAlgorithm>({
    ring: [reduceScatterRing, "messages"],
    shm_direct: [reduceScatterShmDirect, "shared"],
  }),
} as const;

/** The algorithm at `index` of a collective's table (for messages about call stamps). */
export function algorithmName(kind: string, index: number): string | undefined {
  const table = ALGORITHMS[kind as CollectiveName] as Record<string, { index: number }> | undefined;
  return table && Object.keys(table).find((name) => table[name].index === index);
}

/** What the rest of dccl needs to know about a transport: one row per transport. */
export interface TransportInfo {
  /** Memory kinds it carries directly (NCCL's `canConnect`). */
  memory: readonly MemoryKind[];
  /** The kind a run uses unless told (DESIGN.md: "best for the transport"). */
  bestMemory: MemoryKind;
  /** How its ranks start: workers of this process, or subprocesses. */
  launch: "workers" | "processes";
  /** What it offers algorithms (each algorithm states what it needs). */
  offers: readonly AlgorithmNeed[];
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
    offers: ["messages", "shared"],
    rankBytes: 16 * 2 ** 20,
    groupBytes: shmSetupBytes,
  },
  worker: {
    memory: ["host", "shared"],
    bestMemory: "host",
    launch: "workers",
    offers: ["messages"],
    rankBytes: 16 * 2 ** 20,
    groupBytes: () => 0,
  },
  ws: {
    memory: ["host", "shared"],
    bestMemory: "host",
    launch: "processes",
    offers: ["messages"],
    rankBytes: 80 * 2 ** 20,
    groupBytes: () => 0,
  },
};

/** Transport names, in table order. */
export const TRANSPORT_NAMES = Object.keys(TRANSPORTS) as TransportName[];

/** Algorithm names of a collective that can run on `transport`. */
export function algorithmsFor(collective: CollectiveName, transport: TransportName): string[] {
  const offers = TRANSPORTS[transport].offers;
  return Object.values(ALGORITHMS[collective] as Record<string, Algorithm<unknown>>)
    .filter((a) => offers.includes(a.needs)).map((a) => a.name);
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
