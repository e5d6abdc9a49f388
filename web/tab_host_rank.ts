/**
 * What each worker of a tab that runs several ranks of a mixed group runs (`--threads`: the join
 * page starts them as one host of the hierarchy, web/page/join.ts): the task the hub handed the
 * page, after telling the page this rank has joined.
 * @module
 */

import type { Communicator } from "../core.ts";
import type { TabTask } from "./tab_task.ts";
import { taskFunction } from "./tab_task_run.ts";

/** What the page hands each of its ranks. */
export interface TabHostArgs {
  task: TabTask;
  /** The BroadcastChannel the page hears its ranks on (the trainer's progress too). */
  channel: string;
}

/** What a rank tells its page on the channel once the group has begun. */
export interface JoinedMessage {
  type: "joined";
  rank: number;
}

/** Runs the group's task on this rank (see the module docs). */
export async function run(comm: Communicator, args: TabHostArgs): Promise<unknown> {
  const channel = new BroadcastChannel(args.channel);
  channel.postMessage({ type: "joined", rank: comm.rank } satisfies JoinedMessage);
  channel.close();
  const fn = await taskFunction(args.task, args.channel);
  return await fn(comm);
}
