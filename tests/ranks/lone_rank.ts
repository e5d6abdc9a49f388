// Rank program for tests/disagree_test.ts: every rank makes one collective, and rank 1 alone
// passes another root, count or dtype; the verdict must name rank 1, whoever checks first, and
// whether or not the ranks catch what they are told.
import type { Communicator } from "../../mod.ts";
import type { Dtype } from "../../core.ts";
import { TRANSPORT_TABLE } from "../../deno/transport_table.ts";

export type LoneCollective =
  | "bcast"
  | "reduce"
  | "gather"
  | "scatter"
  | "allreduce"
  | "allgather"
  | "reduceScatter"
  | "alltoall";

export interface LoneArgs {
  collective: LoneCollective;
  /** What rank 1 alone passes differently (a root only where the collective takes one). */
  differ: "root" | "count" | "dtype";
  count: number;
  /** The group's root (rank 1 alone passes another with `differ: "root"`). @default {0} */
  root?: number;
  /** Every rank catches the call's error and returns it. */
  caught?: boolean;
}

export async function run(comm: Communicator, args: LoneArgs): Promise<string> {
  const lone = comm.rank === 1;
  const n = args.differ === "count" && lone ? args.count + 1 : args.count;
  const dtype: Dtype = args.differ === "dtype" && lone ? "i32" : "f32";
  const groupRoot = args.root ?? 0;
  const root = args.differ === "root" && lone ? (groupRoot === 0 ? 2 : 0) : groupRoot;
  const memory = TRANSPORT_TABLE.facts(comm.transport).bestMemory;
  const buf = (count: number) => comm.alloc(count, { dtype, memory });
  const all = n * comm.size, isRoot = comm.rank === root;
  const calls: Record<LoneCollective, () => Promise<void>> = {
    bcast: () => comm.bcast(buf(n), { root }),
    reduce: () => comm.reduce(buf(n), { root }),
    gather: () => comm.gather(buf(n), isRoot ? buf(all) : undefined, { root }),
    scatter: () => comm.scatter(isRoot ? buf(all) : undefined, buf(n), { root }),
    allreduce: () => comm.allreduce(buf(n)),
    allgather: () => comm.allgather(buf(n), buf(all)),
    reduceScatter: () => comm.reduceScatter(buf(all), buf(n)),
    alltoall: () => comm.alltoall(buf(all), buf(all)),
  };
  if (!args.caught) {
    await calls[args.collective]();
    return "completed";
  }
  try {
    await calls[args.collective]();
    return "completed";
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
}
