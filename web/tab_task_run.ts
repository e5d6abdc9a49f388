/**
 * How a tab's rank runs the task its group hands it (web/tab_task.ts): the bundled rank program,
 * with what a tab adds to its arguments (the trainer's data, read from the page's server, and
 * the channel its progress goes on).
 * @module
 */

import type { Communicator } from "../core.ts";
import { rankFunction } from "../internal.ts";
import { fetchMnist } from "./served_mnist.ts";
import { SWEEP_PROGRAM, type TabTask, TRAIN_PROGRAM } from "./tab_task.ts";

/** The function a tab's rank runs for `task`, its progress posted on the channel `channel`. */
export async function taskFunction(
  task: TabTask,
  channel: string,
): Promise<(comm: Communicator) => Promise<unknown>> {
  const entry = new URL(task.program.replace(/\.ts$/, ".js"), new URL("/bundle/", location.href));
  const run = await rankFunction(entry.href, "run");
  const args = task.program === TRAIN_PROGRAM
    ? { ...task.args as object, mnist: await fetchMnist(), channel, everyRank: true }
    : task.program === SWEEP_PROGRAM
    ? { ...task.args as object, channel }
    : task.args;
  return async (comm) => await run(comm, args);
}
