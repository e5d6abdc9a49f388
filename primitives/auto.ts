/**
 * How `auto` picks an algorithm (docs/auto.md), naming none: between hosts whose links a group
 * measured as it formed, the cheapest algorithm that states a cost (each descriptor prices
 * itself); on one host, of the most direct kind the transport runs, the algorithm whose own
 * measured bound (`winsBelow`) covers the call's size. The caller can force any algorithm the
 * transport can run (`{ algorithm }`, `--algorithm`).
 * @module
 */

import { type Algorithm, type AlgorithmOf, onHost, sideOfNeed } from "./collectives/algorithm.ts";
import { ALGORITHMS, type AlgorithmTable, type Indexed } from "./registry.ts";
import type { TransportFacts } from "./transports/transport.ts";
import type { AlgorithmNeed, LinkCosts, Side } from "./types.ts";
import type { CollectiveName } from "./collectives/collective_table.ts";

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
export function runnableAlgorithms<C extends CollectiveName>(
  collective: C,
  query: Omit<AutoQuery, "bytes" | "size">,
): Indexed<AlgorithmOf<C>>[] {
  const offers = offersOf(query.transport, query.threads);
  const side = query.side ?? "host";
  return (query.table ?? ALGORITHMS).of(collective).filter((a) =>
    offers.includes(a.needs) && sideOfNeed(a.needs) === side
  );
}

/** Names of {@linkcode runnableAlgorithms}'s algorithms. */
export function algorithmsFor(
  collective: CollectiveName,
  query: Omit<AutoQuery, "bytes" | "size">,
): string[] {
  return runnableAlgorithms(collective, query).map((a) => a.name);
}

/**
 * The kinds of algorithm `auto` prefers, most direct first: direct access moves each byte across
 * memory once and beat every message algorithm at every size and rank count measured; a
 * hierarchy's phases share memory within each process.
 */
const PREFERRED: readonly (readonly AlgorithmNeed[])[] = [
  ["shared", "device"],
  ["hierarchy"],
  ["messages", "staging"],
];

/** The name of the algorithm `auto` picks for `collective` on `query`'s call. */
export function autoAlgorithm(collective: CollectiveName, query: AutoQuery): string {
  return autoPick(collective, query, runnableAlgorithms(collective, query)).name;
}

/** `auto`'s pick among `candidates`, the algorithms of `collective` runnable on `query`'s call. */
function autoPick<A extends Algorithm>(
  collective: CollectiveName,
  query: AutoQuery,
  candidates: readonly A[],
): A {
  const { transport, bytes, size, threads = 1, links } = query;
  const side = query.side ?? "host";
  const spansProcesses = threads > 1 && size > threads;
  if (links && side === "host" && !spansProcesses) {
    const priced = cheapest(candidates, links, bytes, size);
    if (priced) return priced;
  }
  // Each algorithm's own bound (or the transport's word on it): of the most direct kind that has
  // one, the algorithm with the smallest bound above the call's bytes, or the largest bound.
  const bound = (a: A) => {
    const own = a.winsBelow?.(size) ?? 0;
    const restated = transport.winsBelow?.find((w) =>
      w.algorithm.collective === collective && w.algorithm.name === a.name
    );
    return restated?.bound(size, own) ?? own;
  };
  for (const kind of PREFERRED) {
    if (kind.includes("hierarchy") && !spansProcesses) continue;
    let above: A | undefined, aboveBound = Infinity;
    let largest: A | undefined, largestBound = 0;
    for (const a of candidates) {
      if (!kind.includes(a.needs)) continue;
      const b = bound(a);
      if (b > bytes && (above === undefined || b < aboveBound)) [above, aboveBound] = [a, b];
      if (b > largestBound) [largest, largestBound] = [a, b];
    }
    const picked = above ?? largest;
    if (picked) return picked;
  }
  // No algorithm here states where it wins: the first the transport can run.
  if (candidates.length === 0) {
    throw new RangeError(`No ${collective} algorithm runs on transport ${transport.name}`);
  }
  return candidates[0];
}

/** The cheapest of `candidates` that state a cost, by their costs over `links`. */
function cheapest<A extends Algorithm>(
  candidates: readonly A[],
  links: LinkCosts,
  bytes: number,
  size: number,
): A | undefined {
  let best: A | undefined, bestUs = Infinity;
  for (const algorithm of candidates) {
    const us = size === 1 ? 0 : algorithm.cost?.(links, { bytes, size });
    if (us !== undefined && us < bestUs) [best, bestUs] = [algorithm, us];
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
  const candidates = runnableAlgorithms(collective, query);
  const name = query.algorithm ?? "auto";
  const picked = name === "auto"
    ? autoPick(collective, query, candidates)
    : candidates.find((a) => a.name === name);
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
