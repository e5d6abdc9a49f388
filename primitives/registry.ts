/**
 * The registry lists descriptors and nothing else: every algorithm (each file exports its own,
 * algorithm.ts), and the transports a web page can run, in order (NCCL's `ncclTransports[]`).
 * Adding an algorithm is its file and its name in its collective's entry; `auto` (auto.ts) then
 * prices it between hosts with no other edit. Processes transports join the web ones in
 * the Deno table (deno/transport_table.ts).
 * @module
 */

import { ALLGATHER_GPU_DIRECT } from "./collectives/allgather_gpu_direct.ts";
import { ALLGATHER_GPU_RING } from "./collectives/allgather_gpu_ring.ts";
import { ALLGATHER_RING } from "./collectives/allgather_ring.ts";
import { ALLGATHER_SHM_DIRECT } from "./collectives/allgather_shm_direct.ts";
import { ALLREDUCE_GPU_DIRECT } from "./collectives/allreduce_gpu_direct.ts";
import { ALLREDUCE_GPU_RING } from "./collectives/allreduce_gpu_ring.ts";
import { ALLREDUCE_RABENSEIFNER } from "./collectives/allreduce_rabenseifner.ts";
import { ALLREDUCE_RECURSIVE_DOUBLING } from "./collectives/allreduce_recursive_doubling.ts";
import { ALLREDUCE_RING } from "./collectives/allreduce_ring.ts";
import { ALLREDUCE_SHM_DIRECT } from "./collectives/allreduce_shm_direct.ts";
import { ALLTOALL_GPU_DIRECT } from "./collectives/alltoall_gpu_direct.ts";
import { ALLTOALL_PAIRWISE } from "./collectives/alltoall_pairwise.ts";
import { ALLTOALL_SHM_DIRECT } from "./collectives/alltoall_shm_direct.ts";
import { ALLTOALLV_PAIRWISE } from "./collectives/alltoallv_pairwise.ts";
import { ALLTOALLV_SCATTERED } from "./collectives/alltoallv_scattered.ts";
import { ALLTOALLV_SHM_DIRECT } from "./collectives/alltoallv_shm_direct.ts";
import { ALLTOALLV_GPU_DIRECT } from "./collectives/alltoallv_gpu_direct.ts";
import { ALLGATHERV_GPU_DIRECT } from "./collectives/allgatherv_gpu_direct.ts";
import { GATHERV_GPU_DIRECT } from "./collectives/gatherv_gpu_direct.ts";
import { SCATTERV_GPU_DIRECT } from "./collectives/scatterv_gpu_direct.ts";
import { REDUCE_SCATTERV_GPU_DIRECT } from "./collectives/reduce_scatterv_gpu_direct.ts";
import { ALLGATHERV_RING } from "./collectives/allgatherv_ring.ts";
import { GATHERV_LINEAR } from "./collectives/gatherv_linear.ts";
import { GATHERV_SHM_DIRECT } from "./collectives/gatherv_shm_direct.ts";
import { SCATTERV_LINEAR } from "./collectives/scatterv_linear.ts";
import { SCATTERV_SHM_DIRECT } from "./collectives/scatterv_shm_direct.ts";
import { REDUCE_SCATTERV_PAIRWISE } from "./collectives/reduce_scatterv_pairwise.ts";
import { BCAST_BINOMIAL } from "./collectives/bcast_binomial.ts";
import { BCAST_CHAIN } from "./collectives/bcast_chain.ts";
import { BCAST_GPU_DIRECT } from "./collectives/bcast_gpu_direct.ts";
import { BCAST_GPU_RING } from "./collectives/bcast_gpu_ring.ts";
import { BCAST_SCATTER_ALLGATHER } from "./collectives/bcast_scatter_allgather.ts";
import { BCAST_SHM_DIRECT } from "./collectives/bcast_shm_direct.ts";
import { GATHER_BINOMIAL } from "./collectives/gather_binomial.ts";
import { GATHER_GPU_DIRECT } from "./collectives/gather_gpu_direct.ts";
import { GATHER_LINEAR } from "./collectives/gather_linear.ts";
import { GATHER_SHM_DIRECT } from "./collectives/gather_shm_direct.ts";
import { HIERARCHICAL } from "./collectives/hierarchical.ts";
import { REDUCE_BINOMIAL } from "./collectives/reduce_binomial.ts";
import { REDUCE_CHAIN } from "./collectives/reduce_chain.ts";
import { REDUCE_GPU_DIRECT } from "./collectives/reduce_gpu_direct.ts";
import { REDUCE_GPU_RING } from "./collectives/reduce_gpu_ring.ts";
import { REDUCE_SCATTER_GATHER } from "./collectives/reduce_scatter_gather.ts";
import { REDUCE_SCATTER_GPU_DIRECT } from "./collectives/reduce_scatter_gpu_direct.ts";
import { REDUCE_SCATTER_GPU_RING } from "./collectives/reduce_scatter_gpu_ring.ts";
import { REDUCE_SCATTER_RING } from "./collectives/reduce_scatter_ring.ts";
import { REDUCE_SCATTER_SHM_DIRECT } from "./collectives/reduce_scatter_shm_direct.ts";
import { REDUCE_SHM_DIRECT } from "./collectives/reduce_shm_direct.ts";
import { SCATTER_BINOMIAL } from "./collectives/scatter_binomial.ts";
import { SCATTER_GPU_DIRECT } from "./collectives/scatter_gpu_direct.ts";
import { SCATTER_LINEAR } from "./collectives/scatter_linear.ts";
import { SCATTER_SHM_DIRECT } from "./collectives/scatter_shm_direct.ts";
import { PIPELINED, STAGED } from "./collectives/staging.ts";
import type { Algorithm, AlgorithmOf } from "./collectives/algorithm.ts";
import { GPU } from "./transports/gpu.ts";
import { SHM } from "./transports/shm.ts";
import { SIM } from "./transports/sim.ts";
import type {
  ProcessesTransport,
  ThreadTransport,
  TransportDescriptor,
  WorkersTransport,
} from "./transports/transport.ts";
import { WORKER } from "./transports/worker.ts";
import {
  COLLECTIVE_NAMES,
  type CollectiveName,
  isCollective,
} from "./collectives/collective_table.ts";

/**
 * Each collective's algorithms in the order of its table (call stamps carry positions in it, so
 * a new one goes at the end of its collective's). Every collective has one at least: the type
 * checker names one without.
 */
const BY_COLLECTIVE: {
  readonly [C in CollectiveName]: readonly [AlgorithmOf<C>, ...AlgorithmOf<C>[]];
} = {
  allreduce: [
    ALLREDUCE_RECURSIVE_DOUBLING,
    ALLREDUCE_RING,
    ALLREDUCE_RABENSEIFNER,
    ALLREDUCE_SHM_DIRECT,
    ALLREDUCE_GPU_DIRECT,
    ALLREDUCE_GPU_RING,
  ],
  bcast: [
    BCAST_BINOMIAL,
    BCAST_SCATTER_ALLGATHER,
    BCAST_CHAIN,
    BCAST_SHM_DIRECT,
    BCAST_GPU_DIRECT,
    BCAST_GPU_RING,
  ],
  reduce: [
    REDUCE_BINOMIAL,
    REDUCE_SCATTER_GATHER,
    REDUCE_CHAIN,
    REDUCE_SHM_DIRECT,
    REDUCE_GPU_DIRECT,
    REDUCE_GPU_RING,
  ],
  allgather: [ALLGATHER_RING, ALLGATHER_SHM_DIRECT, ALLGATHER_GPU_DIRECT, ALLGATHER_GPU_RING],
  reduceScatter: [
    REDUCE_SCATTER_RING,
    REDUCE_SCATTER_SHM_DIRECT,
    REDUCE_SCATTER_GPU_DIRECT,
    REDUCE_SCATTER_GPU_RING,
  ],
  alltoall: [ALLTOALL_PAIRWISE, ALLTOALL_SHM_DIRECT, ALLTOALL_GPU_DIRECT],
  gather: [GATHER_BINOMIAL, GATHER_LINEAR, GATHER_SHM_DIRECT, GATHER_GPU_DIRECT],
  scatter: [SCATTER_BINOMIAL, SCATTER_LINEAR, SCATTER_SHM_DIRECT, SCATTER_GPU_DIRECT],
  alltoallv: [ALLTOALLV_PAIRWISE, ALLTOALLV_SCATTERED, ALLTOALLV_SHM_DIRECT, ALLTOALLV_GPU_DIRECT],
  allgatherv: [ALLGATHERV_RING, ALLGATHERV_GPU_DIRECT],
  gatherv: [GATHERV_LINEAR, GATHERV_SHM_DIRECT, GATHERV_GPU_DIRECT],
  scatterv: [SCATTERV_LINEAR, SCATTERV_SHM_DIRECT, SCATTERV_GPU_DIRECT],
  reduceScatterv: [REDUCE_SCATTERV_PAIRWISE, REDUCE_SCATTERV_GPU_DIRECT],
};

/** Every algorithm: each collective's own, then those every collective has (staging, hierarchy). */
export const ALGORITHM_LIST: readonly Algorithm[] = [
  ...Object.values(BY_COLLECTIVE).flat(),
  ...STAGED,
  ...PIPELINED,
  ...HIERARCHICAL,
];

/** An algorithm with its position in its collective's table (call stamps carry it). */
export type Indexed<A> = A & { readonly index: number };

/** Every collective's algorithms from a list of descriptors, by name and in order. */
export class AlgorithmTable {
  readonly #tables = new Map<CollectiveName, Indexed<Algorithm>[]>();

  /** The table of `list`; two algorithms of one collective may not share a name. */
  constructor(list: readonly Algorithm[]) {
    for (const algorithm of list) {
      const table = this.#tables.get(algorithm.collective) ?? [];
      if (table.some((a) => a.name === algorithm.name)) {
        throw new Error(`Two ${algorithm.collective} algorithms are named ${algorithm.name}`);
      }
      table.push({ ...algorithm, index: table.length });
      this.#tables.set(algorithm.collective, table);
    }
  }

  /** Algorithms of `collective`, in table order. */
  of<C extends CollectiveName>(collective: C): readonly Indexed<AlgorithmOf<C>>[] {
    return (this.#tables.get(collective) ?? []).filter(
      (a): a is Indexed<AlgorithmOf<C>> => a.collective === collective,
    );
  }

  /** Names of `collective`'s algorithms, in table order. */
  names(collective: CollectiveName): string[] {
    return (this.#tables.get(collective) ?? []).map((a) => a.name);
  }

  /** `collective`'s algorithm named `name`, if there is one. */
  named<C extends CollectiveName>(
    collective: C,
    name: string,
  ): Indexed<AlgorithmOf<C>> | undefined {
    return this.of(collective).find((a) => a.name === name);
  }
}

/** The registry's algorithms. */
export const ALGORITHMS: AlgorithmTable = new AlgorithmTable(ALGORITHM_LIST);

/** Every collective's algorithm names, in table order (which a transport runs: `algorithmsFor`). */
export const ALGORITHM_NAMES: Readonly<Record<CollectiveName, readonly string[]>> = Object
  .fromEntries(COLLECTIVE_NAMES.map((c) => [c, ALGORITHMS.names(c)])) as unknown as Record<
    CollectiveName,
    readonly string[]
  >;

/** The algorithm at `index` of a collective's table (for messages about call stamps). */
export function algorithmName(collective: string, index: number): string | undefined {
  return isCollective(collective) ? ALGORITHM_NAMES[collective][index] : undefined;
}

/** The descriptors of a transport table of one launch kind. */
export type Launching<L extends TransportDescriptor["launch"]> = Extract<
  TransportDescriptor,
  { launch: L }
>;

/** Transports in order, by name (NCCL's ordered transport table). */
export class TransportTable<N extends string = string> {
  /** Names in the table's order; the first is the default of the tasks and launchers. */
  readonly names: readonly N[];
  /** Each transport's descriptor by name. */
  readonly byName: { readonly [K in N]: TransportDescriptor & { readonly name: K } };

  /** The table of `byName`'s descriptors, in its order. */
  constructor(byName: { readonly [K in N]: TransportDescriptor & { readonly name: K } }) {
    this.byName = byName;
    this.names = Object.values<TransportDescriptor & { readonly name: N }>(byName).map((t) =>
      t.name
    );
  }

  /** The facts of the transport named `name`; a TypeError naming the table's for another. */
  facts(name: string): TransportDescriptor & { readonly name: N } {
    if (!this.has(name)) {
      throw new TypeError(`Unknown transport ${name}: expected ${this.names.join(", ")}`);
    }
    return this.byName[name];
  }

  /** Whether `name` is one of the table's transports. */
  has(name: string): name is N {
    return (this.names as readonly string[]).includes(name);
  }

  /** The transports whose ranks start as `launch` says, in the table's order. */
  launching(launch: TransportDescriptor["launch"]): N[] {
    return this.names.filter((t) => this.byName[t].launch === launch);
  }

  /** The descriptor of `name` if its ranks start as `launch` says; else a TypeError. */
  launchedAs<L extends TransportDescriptor["launch"]>(name: string, launch: L): Launching<L> {
    const descriptor = this.has(name) ? this.byName[name] : undefined;
    if (!descriptor || !startsAs(descriptor, launch)) {
      throw new TypeError(
        `Transport ${name} does not start its ranks as ${launch}: expected ${
          this.launching(launch).join(" or ")
        }`,
      );
    }
    return descriptor;
  }

  /**
   * The first workers transport that gives algorithms shared access to its peers' heaps: what
   * the ranks of one host share in a hierarchical group (hierarchy.ts).
   */
  sharedMemory(): WorkersTransport {
    for (const name of this.names) {
      const t: TransportDescriptor = this.byName[name];
      if (startsAs(t, "workers") && t.offers.includes("shared")) return t;
    }
    throw new Error("No workers transport in the table shares memory");
  }
}

function startsAs<L extends TransportDescriptor["launch"]>(
  descriptor: TransportDescriptor,
  launch: L,
): descriptor is Launching<L> {
  return descriptor.launch === launch;
}

/** A web transport's name: one whose ranks a web page can start (workers, or its GPU). */
export type WebTransportName = "shm" | "worker" | "gpu" | "sim";

/** The web transports, in order. */
export const WEB_TRANSPORTS: TransportTable<WebTransportName> = new TransportTable({
  shm: SHM,
  worker: WORKER,
  gpu: GPU,
  sim: SIM,
});

export type { ProcessesTransport, ThreadTransport, WorkersTransport };
