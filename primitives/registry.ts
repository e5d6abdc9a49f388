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
import { alltoallGpuDirect } from "./collectives/alltoall_gpu_direct.ts";
import { alltoallPairwise } from "./collectives/alltoall_pairwise.ts";
import { alltoallShmDirect } from "./collectives/alltoall_shm_direct.ts";
import { bcastBinomial } from "./collectives/bcast_binomial.ts";
import { bcastChain } from "./collectives/bcast_chain.ts";
import { bcastGpuDirect } from "./collectives/bcast_gpu_direct.ts";
import { bcastGpuRing } from "./collectives/bcast_gpu_ring.ts";
import { bcastScatterAllgather } from "./collectives/bcast_scatter_allgather.ts";
import { bcastShmDirect } from "./collectives/bcast_shm_direct.ts";
import { gatherBinomial } from "./collectives/gather_binomial.ts";
import { gatherGpuDirect } from "./collectives/gather_gpu_direct.ts";
import { gatherLinear } from "./collectives/gather_linear.ts";
import { gatherShmDirect } from "./collectives/gather_shm_direct.ts";
import { scatterBinomial } from "./collectives/scatter_binomial.ts";
import { scatterGpuDirect } from "./collectives/scatter_gpu_direct.ts";
import { scatterLinear } from "./collectives/scatter_linear.ts";
import { scatterShmDirect } from "./collectives/scatter_shm_direct.ts";
import {
  type AllgatherAlgorithm,
  type AllreduceAlgorithm,
  type AlltoallAlgorithm,
  type BcastAlgorithm,
  type CollectiveContext,
  type GatherAlgorithm,
  type HostAlgorithms,
  type Operand,
  type ReduceAlgorithm,
  type ReduceScatterAlgorithm,
  type ScatterAlgorithm,
  viaOutput,
} from "./collectives/context.ts";
import { reduceBinomial } from "./collectives/reduce_binomial.ts";
import { reduceChain } from "./collectives/reduce_chain.ts";
import { reduceGpuDirect } from "./collectives/reduce_gpu_direct.ts";
import { reduceGpuRing } from "./collectives/reduce_gpu_ring.ts";
import { reduceScatterGather } from "./collectives/reduce_scatter_gather.ts";
import { reduceScatterGpuDirect } from "./collectives/reduce_scatter_gpu_direct.ts";
import { reduceScatterGpuRing } from "./collectives/reduce_scatter_gpu_ring.ts";
import { reduceScatterRing } from "./collectives/reduce_scatter_ring.ts";
import { reduceScatterShmDirect } from "./collectives/reduce_scatter_shm_direct.ts";
import { reduceShmDirect } from "./collectives/reduce_shm_direct.ts";
import { hierarchicalAlgorithms } from "./collectives/hierarchical.ts";
import { stagingAlgorithms } from "./collectives/staging.ts";
import { cheapestAlgorithm, type LinkCosts } from "./cost_model.ts";
import { GPU } from "./transports/gpu.ts";
import { SHM } from "./transports/shm.ts";
import { TCP } from "./transports/tcp.ts";
import type { TransportDescriptor, TransportFacts } from "./transports/transport.ts";
import { WORKER } from "./transports/worker.ts";
import { WS } from "./transports/ws.ts";
import type { AlgorithmNeed, CollectiveName, MemoryKind, Side } from "./types.ts";

export type { AlgorithmNeed, CollectiveName, TransportFacts };

/** The side of memory an algorithm with these needs works on. */
export function sideOfNeed(need: AlgorithmNeed): Side {
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

/**
 * What staging and the hierarchical algorithms' channels run: the algorithm `auto` picks on a
 * one-level group (looked up when it runs).
 */
const hostAlgorithm =
  <C extends CollectiveName>(collective: C) => (ctx: CollectiveContext, bytes: number) => {
    const transport = ctx.transport.name as TransportName;
    const name = autoAlgorithm(
      collective,
      transport,
      bytes,
      ctx.size,
      "host",
      1,
      ctx.transport.links,
    );
    return ALGORITHMS[collective][name].run;
  };
const HOST = {
  allreduce: hostAlgorithm("allreduce"),
  bcast: hostAlgorithm("bcast"),
  reduce: hostAlgorithm("reduce"),
  allgather: hostAlgorithm("allgather"),
  reduceScatter: hostAlgorithm("reduceScatter"),
  alltoall: hostAlgorithm("alltoall"),
  gather: hostAlgorithm("gather"),
  scatter: hostAlgorithm("scatter"),
} as HostAlgorithms;
const STAGING = stagingAlgorithms(HOST);
/** Hierarchical algorithms, running over each channel what `auto` picks for it. */
const HIERARCHICAL = hierarchicalAlgorithms(HOST);

/** Each collective's algorithm signature, over every operand kind its algorithms take. */
export interface CollectiveAlgorithms {
  allreduce: AllreduceAlgorithm<Operand>;
  bcast: BcastAlgorithm<Operand>;
  reduce: ReduceAlgorithm<Operand>;
  allgather: AllgatherAlgorithm<Operand>;
  reduceScatter: ReduceScatterAlgorithm<Operand>;
  alltoall: AlltoallAlgorithm<Operand>;
  gather: GatherAlgorithm<Operand>;
  scatter: ScatterAlgorithm<Operand>;
}

/** Algorithms of every collective, by name. */
export const ALGORITHMS: {
  readonly [C in CollectiveName]: Readonly<Record<string, Algorithm<CollectiveAlgorithms[C]>>>;
} = {
  allreduce: algorithms<AllreduceAlgorithm<Operand>>({
    recursive_doubling: [viaOutput(allreduceRecursiveDoubling), "messages"],
    ring: [allreduceRing, "messages"],
    rabenseifner: [viaOutput(allreduceRabenseifner), "messages"],
    shm_direct: [allreduceShmDirect, "shared"],
    gpu_direct: [allreduceGpuDirect, "device"],
    gpu_ring: [allreduceGpuRing, "device"],
    staged: [STAGING.allreduce.staged, "staging"],
    pipelined: [STAGING.allreduce.pipelined, "staging"],
    hierarchical: [HIERARCHICAL.allreduce, "hierarchy"],
  }),
  bcast: algorithms<BcastAlgorithm<Operand>>({
    binomial: [bcastBinomial, "messages"],
    scatter_allgather: [bcastScatterAllgather, "messages"],
    chain: [bcastChain, "messages"],
    shm_direct: [bcastShmDirect, "shared"],
    gpu_direct: [bcastGpuDirect, "device"],
    gpu_ring: [bcastGpuRing, "device"],
    staged: [STAGING.bcast.staged, "staging"],
    pipelined: [STAGING.bcast.pipelined, "staging"],
    hierarchical: [HIERARCHICAL.bcast, "hierarchy"],
  }),
  reduce: algorithms<ReduceAlgorithm<Operand>>({
    binomial: [viaOutput(reduceBinomial), "messages"],
    scatter_gather: [viaOutput(reduceScatterGather), "messages"],
    chain: [viaOutput(reduceChain), "messages"],
    shm_direct: [reduceShmDirect, "shared"],
    gpu_direct: [reduceGpuDirect, "device"],
    gpu_ring: [reduceGpuRing, "device"],
    staged: [STAGING.reduce.staged, "staging"],
    pipelined: [STAGING.reduce.pipelined, "staging"],
    hierarchical: [HIERARCHICAL.reduce, "hierarchy"],
  }),
  allgather: algorithms<AllgatherAlgorithm<Operand>>({
    ring: [allgatherRing, "messages"],
    shm_direct: [allgatherShmDirect, "shared"],
    gpu_direct: [allgatherGpuDirect, "device"],
    gpu_ring: [allgatherGpuRing, "device"],
    staged: [STAGING.allgather.staged, "staging"],
    pipelined: [STAGING.allgather.pipelined, "staging"],
    hierarchical: [HIERARCHICAL.allgather, "hierarchy"],
  }),
  reduceScatter: algorithms<ReduceScatterAlgorithm<Operand>>({
    ring: [reduceScatterRing, "messages"],
    shm_direct: [reduceScatterShmDirect, "shared"],
    gpu_direct: [reduceScatterGpuDirect, "device"],
    gpu_ring: [reduceScatterGpuRing, "device"],
    staged: [STAGING.reduceScatter.staged, "staging"],
    pipelined: [STAGING.reduceScatter.pipelined, "staging"],
    hierarchical: [HIERARCHICAL.reduceScatter, "hierarchy"],
  }),
  alltoall: algorithms<AlltoallAlgorithm<Operand>>({
    pairwise: [alltoallPairwise, "messages"],
    shm_direct: [alltoallShmDirect, "shared"],
    gpu_direct: [alltoallGpuDirect, "device"],
    staged: [STAGING.alltoall.staged, "staging"],
  }),
  gather: algorithms<GatherAlgorithm<Operand>>({
    binomial: [gatherBinomial, "messages"],
    linear: [gatherLinear, "messages"],
    shm_direct: [gatherShmDirect, "shared"],
    gpu_direct: [gatherGpuDirect, "device"],
    staged: [STAGING.gather.staged, "staging"],
  }),
  scatter: algorithms<ScatterAlgorithm<Operand>>({
    binomial: [scatterBinomial, "messages"],
    linear: [scatterLinear, "messages"],
    shm_direct: [scatterShmDirect, "shared"],
    gpu_direct: [scatterGpuDirect, "device"],
    staged: [STAGING.scatter.staged, "staging"],
  }),
} as const;

/** Each collective's algorithms over messages: what the cost model chooses among between hosts. */
const MESSAGE_ALGORITHMS = Object.fromEntries(
  Object.entries(ALGORITHMS).map(([c, table]) => [
    c,
    Object.values(table).filter((a) => a.needs === "messages").map((a) => a.name),
  ]),
) as Record<CollectiveName, string[]>;

/** Every collective's algorithm names, in table order (which a transport runs: `algorithmsFor`). */
export const ALGORITHM_NAMES: Readonly<Record<CollectiveName, readonly string[]>> = Object
  .fromEntries(
    Object.entries(ALGORITHMS).map(([c, table]) => [c, Object.keys(table)]),
  ) as Record<CollectiveName, string[]>;

/** The algorithm at `index` of a collective's table (for messages about call stamps). */
export function algorithmName(kind: string, index: number): string | undefined {
  const table = ALGORITHMS[kind as CollectiveName] as Record<string, { index: number }> | undefined;
  return table && Object.keys(table).find((name) => table[name].index === index);
}

/** A transport's name (`--transport`): each is one descriptor of {@linkcode TRANSPORT_NAMES}. */
export type TransportName = "shm" | "worker" | "ws" | "tcp" | "gpu";

/**
 * Every transport, in order (NCCL's `ncclTransports[]`): each transport's file exports its
 * descriptor, so adding one is that file and a line here (the compiler then asks for its name in
 * {@linkcode TransportName}). The first is the default of the tasks and launchers; the first of
 * each launch kind is its default.
 */
const DESCRIPTORS: { readonly [N in TransportName]: TransportDescriptor & { name: N } } = {
  shm: SHM,
  worker: WORKER,
  ws: WS,
  tcp: TCP,
  gpu: GPU,
};

/** Every transport's facts, by name (the one table tests, benchmarks and the CLI read). */
export const TRANSPORTS: Readonly<Record<TransportName, TransportFacts>> = DESCRIPTORS;

/** Transport names, in the list's order. */
export const TRANSPORT_NAMES: readonly TransportName[] = Object.keys(
  DESCRIPTORS,
) as TransportName[];

/** The transports whose ranks start as `launch` says, in the list's order. */
export function transportsLaunching(launch: TransportFacts["launch"]): TransportName[] {
  return TRANSPORT_NAMES.filter((t) => TRANSPORTS[t].launch === launch);
}

/** Transports whose ranks are processes (`--launcher env` runs over these; the first unless told). */
export const PROCESS_TRANSPORTS: readonly TransportName[] = transportsLaunching("processes");

/** The descriptor of `name` if its ranks start as `launch` says; else a TypeError. */
export function launchedAs<L extends TransportDescriptor["launch"]>(
  name: string,
  launch: L,
): Extract<TransportDescriptor, { launch: L }> {
  const descriptor = DESCRIPTORS[name as TransportName];
  if (descriptor?.launch !== launch) {
    throw new TypeError(
      `Transport ${name} does not start its ranks as ${launch}: expected ${
        transportsLaunching(launch).join(" or ")
      }`,
    );
  }
  return descriptor as Extract<TransportDescriptor, { launch: L }>;
}

/**
 * `value` (a flag or an environment variable, named by `source`) if it names one of `accepted`;
 * else a one-line Error saying what is accepted.
 */
export function transportNamed(
  value: string,
  source: string,
  accepted: readonly TransportName[] = TRANSPORT_NAMES,
): TransportName {
  if ((accepted as readonly string[]).includes(value)) return value as TransportName;
  throw new Error(`${source}=${value} is not accepted: expected ${accepted.join(" or ")}`);
}

/** Memory kinds that live on a device (the rest are host memory). */
export const DEVICE_MEMORY: readonly MemoryKind[] = ["gpu", "managed"];

/** Whether ranks of `transport` with buffers of `memory` need a WebGPU device. */
export function needsDevice(transport: TransportName, memory: MemoryKind): boolean {
  return TRANSPORTS[transport].needsDevice || DEVICE_MEMORY.includes(memory);
}

/**
 * The side a buffer of `memory` is used on over `transport`: device memory on the device, host
 * memory on the host, and managed memory wherever the transport's algorithms work (on the device
 * for `gpu`, on the host copy elsewhere, as a CPU touching managed memory would).
 */
export function sideOfMemory(transport: TransportName, memory: MemoryKind): Side {
  if (memory === "gpu") return "device";
  if (memory === "managed" && TRANSPORTS[transport].offers.includes("device")) return "device";
  return "host";
}

/** Algorithm names of a collective that can run on `transport` with buffers on `side`. */
export function algorithmsFor(
  collective: CollectiveName,
  transport: TransportName,
  side: Side = "host",
  threads = 1,
): string[] {
  const offers = offersOf(transport, threads);
  return Object.values(ALGORITHMS[collective] as Record<string, Algorithm<unknown>>)
    .filter((a) => offers.includes(a.needs) && sideOfNeed(a.needs) === side).map((a) => a.name);
}

/**
 * What `auto` picks. Between hosts whose link costs were measured (`links`), the message
 * algorithm the cost model prices cheapest (cost_model.ts). Otherwise a transport's own preference
 * where it has one (its descriptor's `prefers`), else the rule for every transport, from
 * crossovers measured with the harness and `deno task compare` (docs/auto.md). Device buffers over
 * host transports stage (pipelined from 16 MiB, four segments or more); on message transports
 * recursive doubling wins below 512 KiB, Rabenseifner up to 4 MiB on power-of-two groups, the
 * ring above; binomial trees beat the scatter forms of bcast and reduce at every size measured.
 */
export function autoAlgorithm(
  collective: CollectiveName,
  transport: TransportName,
  bytes: number,
  size: number,
  side: Side = "host",
  threads = 1,
  links?: LinkCosts,
): string {
  const hierarchical = threads > 1 && size > threads;
  // Ranks are numbered host by host, so a binomial tree crosses each host's link once per call,
  // as the hierarchical bcast and reduce do, without their shared-memory phases: on a 2 × 2
  // cluster it led them at small sizes and matched or beat them at large (docs/hierarchy.md).
  if (hierarchical && side === "host" && (collective === "bcast" || collective === "reduce")) {
    return "binomial";
  }
  if (links && side === "host" && !hierarchical) {
    const modeled = cheapestAlgorithm(
      collective,
      MESSAGE_ALGORITHMS[collective],
      bytes,
      size,
      links,
    );
    if (modeled) return modeled;
  }
  const preferred = TRANSPORTS[transport].prefers?.(collective, bytes, size, side);
  if (preferred) return preferred;
  if (side === "device") {
    return bytes >= 16 * 1024 * 1024 && "pipelined" in ALGORITHMS[collective]
      ? "pipelined"
      : "staged";
  }
  if (hierarchical && "hierarchical" in ALGORITHMS[collective]) return "hierarchical";
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
    case "alltoall":
      return "pairwise";
    case "gather":
      // The tree's copies (its subtree blocks, then the root's reordering) cost more than the
      // root's n − 1 receives at every size measured.
      return "linear";
    case "scatter":
      // The root's ⌈log2 n⌉ sends beat its n − 1 until the forwarded blocks cost more.
      return bytes < 8 * 1024 ? "binomial" : "linear";
  }
}

/**
 * The algorithm of `collective` named `algorithm` (`auto` or none: {@linkcode autoAlgorithm}'s
 * pick) for a `bytes`-byte buffer on `size` ranks of `transport`, used on `side`; a one-line
 * RangeError naming the accepted ones when it cannot run there.
 */
export function pickAlgorithm<C extends CollectiveName>(
  collective: C,
  algorithm: string | undefined,
  transport: TransportName,
  bytes: number,
  size: number,
  side: Side,
  threads = 1,
  links?: LinkCosts,
): typeof ALGORITHMS[C][string] {
  const name = algorithm === undefined || algorithm === "auto"
    ? autoAlgorithm(collective, transport, bytes, size, side, threads, links)
    : algorithm;
  const table = ALGORITHMS[collective] as Record<string, typeof ALGORITHMS[C][string]>;
  const picked = Object.hasOwn(table, name) ? table[name] : undefined;
  if (
    !picked || !offersOf(transport, threads).includes(picked.needs) ||
    sideOfNeed(picked.needs) !== side
  ) {
    const group = threads > 1 ? ` × ${threads} threads` : "";
    throw new RangeError(
      `Unknown ${collective} algorithm ${name} for transport ${transport}${group} with ${side} ` +
        `buffers: expected auto, ${algorithmsFor(collective, transport, side, threads).join(", ")}`,
    );
  }
  return picked;
}

/**
 * What a group of `transport` offers algorithms: its descriptor's offers, and the hierarchy when
 * its processes run `threads` ranks each (hierarchy.ts).
 */
export function offersOf(transport: TransportName, threads = 1): readonly AlgorithmNeed[] {
  const offers = TRANSPORTS[transport].offers;
  return threads > 1 ? [...offers, "hierarchy"] : offers;
}
