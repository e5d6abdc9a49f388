/**
 * How `auto` picks an algorithm (docs/auto.md). Between hosts whose links a group measured as it
 * formed, the cheapest algorithm that states a cost (each descriptor prices itself); where the
 * transport gives direct access to every rank's memory, the algorithm that uses it; otherwise the
 * crossovers measured with the harness and `deno task compare`, named below. The caller can force
 * any algorithm the transport can run (`{ algorithm }`, `--algorithm`).
 * @module
 */

import { type Algorithm, type AlgorithmOf, onHost, sideOfNeed } from "./collectives/algorithm.ts";
import { ALGORITHMS, type AlgorithmTable, type Indexed } from "./registry.ts";
import type { TransportFacts } from "./transports/transport.ts";
import type { AlgorithmNeed, CollectiveName, Crossovers, LinkCosts, Side } from "./types.ts";

/**
 * The crossovers `auto` picks by on one machine, measured with the harness (docs/auto.md, "Why";
 * the data: docs/results/2026-11-transports.md). A transport's descriptor overrides any it
 * measured otherwise (`TransportFacts.crossovers`).
 */
export const CROSSOVERS: Readonly<Crossovers> = {
  recursiveDoublingBelow: 512 * 1024,
  recursiveDoublingBelowOnTwo: 512 * 1024,
  rabenseifnerBelow: 4 * 1024 * 1024,
  binomialScatterBelow: 8 * 1024,
  pipelinedFrom: 16 * 1024 * 1024,
};

/** A call `auto` picks for. */
export interface AutoQuery {
  /** The facts of the transport the group runs on. */
  transport: TransportFacts;
  /** Bytes of the call's buffer (the whole buffer for the block collectives). */
  bytes: number;
  /** Ranks in the group. */
  size: number;
  /** Where the call's buffers are used. @default {"host"} */
  side?: Side;
  /** Ranks per process of a hierarchical group. @default {1} */
  threads?: number;
  /** What the links between the group's hosts cost, when it spans hosts. */
  links?: LinkCosts;
  /** The algorithms to choose among. @default {the registry's} */
  table?: AlgorithmTable;
}

/** A call with an algorithm named, or `auto`. */
export interface PickQuery extends AutoQuery {
  /** An algorithm's name, or `auto`. @default {"auto"} */
  algorithm?: string;
}

/** What a group of `transport` offers algorithms (the hierarchy's levels with `threads`). */
export function offersOf(transport: TransportFacts, threads?: number): readonly AlgorithmNeed[] {
  threads ??= 1;
  return threads > 1 ? [...transport.offers, "hierarchy"] : transport.offers;
}

/** The algorithms of `collective` that can run on `query`'s transport on its side. */
export function runnable<C extends CollectiveName>(
  collective: C,
  query: Omit<AutoQuery, "bytes" | "size">,
): Indexed<AlgorithmOf<C>>[] {
  const offers = offersOf(query.transport, query.threads);
  const side = query.side ?? "host";
  return (query.table ?? ALGORITHMS).of(collective).filter((a) =>
    offers.includes(a.needs) && sideOfNeed(a.needs) === side
  );
}

/** Names of {@linkcode runnable}'s algorithms. */
export function algorithmsFor(
  collective: CollectiveName,
  query: Omit<AutoQuery, "bytes" | "size">,
): string[] {
  return runnable(collective, query).map((a) => a.name);
}

/** The name of the algorithm `auto` picks for `collective` on `query`'s call. */
export function autoAlgorithm(collective: CollectiveName, query: AutoQuery): string {
  const { transport, bytes, size, threads = 1, links } = query;
  const side = query.side ?? "host";
  const hierarchical = threads > 1 && size > threads;
  const candidates: readonly Algorithm[] = runnable(collective, query);
  // Ranks are numbered host by host, so a binomial tree crosses each host's link once per call,
  // as the hierarchical bcast and reduce do, without their shared-memory phases: on a 2 × 2
  // cluster it led them at small sizes and matched or beat them at large (docs/hierarchy.md).
  if (hierarchical && side === "host" && (collective === "bcast" || collective === "reduce")) {
    return "binomial";
  }
  if (links && side === "host" && !hierarchical) {
    const priced = cheapest(candidates, links, bytes, size);
    if (priced) return priced;
  }
  // Direct access moves each byte across memory once: it beat every message algorithm at every
  // size and rank count measured.
  const direct = side === "host" ? "shared" : "device";
  const first = candidates.find((a) => a.needs === direct);
  if (first) return first.name;
  const x = { ...CROSSOVERS, ...transport.crossovers };
  if (side === "device") {
    return bytes >= x.pipelinedFrom && candidates.some((a) => a.name === "pipelined")
      ? "pipelined"
      : "staged";
  }
  if (hierarchical && candidates.some((a) => a.name === "hierarchical")) return "hierarchical";
  switch (collective) {
    case "allreduce": {
      if (bytes < (size === 2 ? x.recursiveDoublingBelowOnTwo : x.recursiveDoublingBelow)) {
        return "recursive_doubling";
      }
      const powerOfTwo = (size & (size - 1)) === 0;
      return bytes < x.rabenseifnerBelow && size > 2 && powerOfTwo ? "rabenseifner" : "ring";
    }
    case "bcast":
    case "reduce":
      // Binomial trees beat the scatter forms at every size measured on one machine.
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
      return bytes < x.binomialScatterBelow ? "binomial" : "linear";
  }
}

/** The cheapest of `candidates` that state a cost, by their costs over `links`. */
function cheapest(
  candidates: readonly Algorithm[],
  links: LinkCosts,
  bytes: number,
  size: number,
): string | undefined {
  let best: string | undefined, bestUs = Infinity;
  for (const algorithm of candidates) {
    const us = size === 1 ? 0 : algorithm.cost?.(links, { bytes, size });
    if (us !== undefined && us < bestUs) [best, bestUs] = [algorithm.name, us];
  }
  return best;
}

/**
 * The algorithm of `collective` that `query.algorithm` names (`auto` or none:
 * {@linkcode autoAlgorithm}'s pick); a one-line RangeError naming the accepted ones when it
 * cannot run on the query's transport and side.
 */
export function pickAlgorithm<C extends CollectiveName>(
  collective: C,
  query: PickQuery,
): Indexed<AlgorithmOf<C>> {
  const name = query.algorithm === undefined || query.algorithm === "auto"
    ? autoAlgorithm(collective, query)
    : query.algorithm;
  const candidates = runnable(collective, query);
  const picked = candidates.find((a) => a.name === name);
  if (!picked) {
    const threads = query.threads ?? 1;
    const group = threads > 1 ? ` × ${threads} threads` : "";
    throw new RangeError(
      `Unknown ${collective} algorithm ${name} for transport ${query.transport.name}${group} ` +
        `with ${query.side ?? "host"} buffers: expected auto, ${
          candidates.map((a) => a.name).join(", ")
        }`,
    );
  }
  return picked;
}

/** `pickAlgorithm` for a host call, typed as the host algorithm it is. */
export function pickHostAlgorithm<C extends CollectiveName>(
  collective: C,
  query: PickQuery,
): Indexed<AlgorithmOf<C>> & { readonly needs: "messages" | "shared" | "hierarchy" } {
  const picked = pickAlgorithm(collective, { ...query, side: "host" });
  if (!onHost(picked)) throw new Error(`${collective} ${picked.name} is not a host algorithm`);
  return picked;
}
