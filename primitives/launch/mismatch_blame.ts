/**
 * Which rank's call differs from the group's. A mismatch check compares two ranks' stamps and
 * cannot tell which of the two is wrong; the launcher can, from every rank's latest calls
 * (reported as it ends): at the first call where the reported stamps differ, the majority's
 * stamp is the group's. On a tie, a rooted collective follows the root's view (the side whose
 * stamp names a root among its own ranks), then the side of the lowest rank.
 * @module
 */

import { algorithmName } from "../registry.ts";
import { describeStamp, shapeOf } from "../communicator/stamp.ts";
import { COLLECTIVES } from "../collectives/collective_table.ts";

/** A rank's latest collective calls, oldest first, as `[tag, stamp]` pairs. */
export type CallHistory = readonly (readonly [number, number])[];

/** The rank whose call differs, and what it and the others called. */
export interface OddCall {
  rank: number;
  /** What it called. */
  called: string;
  /** The ranks that made the group's call, and what they called. */
  others: number[];
  theyCalled: string;
  /** More ranks made the group's call than any other (not a tie decided by the root's view). */
  majority: boolean;
}

/** The odd rank among `histories` (by rank), or undefined when no two reported stamps differ. */
export function oddCall(histories: ReadonlyMap<number, CallHistory>): OddCall | undefined {
  const byTag = new Map<number, Map<number, number[]>>();
  for (const [rank, history] of histories) {
    for (const [tag, stamp] of history) {
      const sides = byTag.get(tag) ?? new Map<number, number[]>();
      sides.set(stamp, [...(sides.get(stamp) ?? []), rank]);
      byTag.set(tag, sides);
    }
  }
  const first = [...byTag.keys()].sort((a, b) => a - b).find((tag) => byTag.get(tag)!.size > 1);
  if (first === undefined) return undefined;
  const sides = [...byTag.get(first)!].map(([stamp, ranks]) => ({ stamp, ranks: ranks.sort() }));
  const selfRooted = (s: { stamp: number; ranks: number[] }) => {
    const shape = shapeOf(s.stamp);
    return shape.kind !== "p2p" && shape.kind !== "barrier" && COLLECTIVES[shape.kind].rooted &&
      s.ranks.includes(shape.root);
  };
  sides.sort((a, b) =>
    b.ranks.length - a.ranks.length || Number(selfRooted(b)) - Number(selfRooted(a)) ||
    a.ranks[0] - b.ranks[0]
  );
  const [group] = sides;
  const odd = sides.slice(1).reduce((low, s) => s.ranks[0] < low.ranks[0] ? s : low);
  const describe = (stamp: number) => describeStamp(stamp, algorithmName);
  return {
    rank: odd.ranks[0],
    called: describe(odd.stamp),
    others: group.ranks,
    theyCalled: describe(group.stamp),
    majority: group.ranks.length > sides[1].ranks.length,
  };
}
