/**
 * A tab's rank of a mixed group (scripts/browser/mixed_group.ts): a worker the join page starts
 * (web/page/join.ts). It joins the group's hub over the `websocket` transport, learns its rank
 * and what the group runs, and runs the bundled rank program the task names — the benchmarks'
 * sweep or the trainer, as the Deno ranks do — telling the page what happens.
 * @module
 */

import { Communicator } from "../core.ts";
import {
  createHeapMemory,
  DEFAULT_TIMEOUT_MS,
  type GroupTable,
  joinWebSocketGroup,
  rankFunction,
  RankHeap,
  RankMemory,
  type RankReport,
  runRank,
} from "../internal.ts";
import { fetchMnist } from "./served_mnist.ts";
import { SWEEP_PROGRAM, type TabTask, TRAIN_PROGRAM } from "./tab_task.ts";
import type { TrainMessage } from "./tab_train_rank.ts";

/** Page → worker: where to join. */
export interface JoinRequest {
  hub: string;
  token: string;
  /** What the tab tells the hub about itself. */
  about: Record<string, unknown>;
  /** The name of the BroadcastChannel the trainer's progress goes on (rank 0's only elsewhere). */
  channel: string;
}

/** Worker → page: the rank joined, its report, or the trainer's progress. */
export type GroupRankMessage =
  | { type: "joined"; table: GroupTable }
  | { type: "report"; report: RankReport }
  | TrainMessage;

const scope = self as unknown as {
  onmessage: (e: MessageEvent<JoinRequest>) => void;
  postMessage(message: GroupRankMessage): void;
};

scope.onmessage = ({ data }) => {
  let task: TabTask | undefined;
  const bundle = new URL("../", import.meta.url);
  runRank({
    async connect() {
      const { transport, table } = await joinWebSocketGroup({
        hub: data.hub,
        token: data.token,
        timeoutMs: DEFAULT_TIMEOUT_MS,
        about: data.about,
      });
      task = table.task as TabTask;
      scope.postMessage({ type: "joined", table });
      return new Communicator(transport, new RankMemory(new RankHeap(createHeapMemory())));
    },
    async fn() {
      const entry = new URL(task!.program.replace(/\.ts$/, ".js"), bundle);
      const run = await rankFunction(entry.href, "run");
      const args = task!.program === TRAIN_PROGRAM
        ? {
          ...task!.args as object,
          mnist: await fetchMnist(),
          channel: data.channel,
          everyRank: true,
        }
        : task!.program === SWEEP_PROGRAM
        ? { ...task!.args as object, channel: data.channel }
        : task!.args;
      return (comm) => run(comm, args);
    },
    args: undefined,
  }, (report) => scope.postMessage({ type: "report", report }));
};
