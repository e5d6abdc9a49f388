// Rank program for tests/disagree_test.ts: ranks that disagree about their calls in the way `mode`
// says, then return at once (no later call would reveal it): every rank must still fail.
import type { Communicator } from "../../mod.ts";
import { TRANSPORT_TABLE } from "../../deno/transport_table.ts";

export type DisagreeMode =
  | "all-roots" // every rank broadcasts naming itself the root
  | "two-roots" // rank 0 names root 0, the others root 1
  | "bcast-vs-allreduce" // rank 0 broadcasts from root 1, the others allreduce
  | "allreduce-vs-bcast" // rank 1 broadcasts from root 0, the others allreduce
  | "skip" // rank 1 skips the collective
  | "unreceived" // rank 0 sends rank 1 a message it never receives
  | "sent-after-close"; // the same, sent once rank 1 has said goodbye

export interface DisagreeArgs {
  mode: DisagreeMode;
  count: number;
  /** Every rank catches what its call throws and returns as if all was well. */
  caught?: boolean;
}

export async function run(comm: Communicator, args: DisagreeArgs): Promise<string> {
  if (!args.caught) return await disagree(comm, args);
  try {
    return await disagree(comm, args);
  } catch (e) {
    return `caught ${(e as Error).name}`;
  }
}

async function disagree(comm: Communicator, { mode, count }: DisagreeArgs): Promise<string> {
  const buf = comm.alloc(count, { memory: TRANSPORT_TABLE.facts(comm.transport).bestMemory });
  switch (mode) {
    case "all-roots":
      await comm.bcast(buf, { root: comm.rank });
      break;
    case "two-roots":
      await comm.bcast(buf, { root: comm.rank === 0 ? 0 : 1 });
      break;
    case "bcast-vs-allreduce":
      if (comm.rank === 0) await comm.bcast(buf, { root: 1 });
      else await comm.allreduce(buf);
      break;
    case "allreduce-vs-bcast":
      if (comm.rank === 1) await comm.bcast(buf, { root: 0 });
      else await comm.allreduce(buf);
      break;
    case "skip":
      if (comm.rank !== 1) await comm.allreduce(buf);
      break;
    case "unreceived":
      if (comm.rank === 0) await comm.send(buf, 1, { tag: 5 });
      break;
    case "sent-after-close":
      if (comm.rank === 0) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await comm.send(buf, 1, { tag: 5 });
      }
      break;
  }
  return "completed";
}
