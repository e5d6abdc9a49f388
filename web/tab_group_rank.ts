/**
 * A tab's one rank of a mixed group (scripts/browser/mixed_group.ts): a worker the join page starts
 * (web/page/join.ts) on the rank it reserved. It joins the group's hub over the `websocket`
 * transport, learns what the group runs, and runs the bundled rank program the task names — the
 * benchmarks' sweep or the trainer, as the Deno ranks do — telling the page what happens. A tab
 * of several ranks runs web/tab_host_rank.ts in each of its workers instead.
 * @module
 */

import { Communicator } from "../core.ts";
import {
  createHeapMemory,
  DEFAULT_TIMEOUT_MS,
  type GroupTable,
  joinWebSocketGroup,
  RankHeap,
  RankMemory,
  type RankReport,
  runRank,
} from "../internal.ts";
import type { TabTask } from "./tab_task.ts";
import { taskFunction } from "./tab_task_run.ts";
import type { TrainMessage } from "./tab_train_rank.ts";

/** Page → worker: where to join. */
export interface JoinRequest {
  hub: string;
  token: string;
  /** The rank the page reserved for it. */
  rank: number;
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
  runRank({
    async connect() {
      const { transport, table } = await joinWebSocketGroup({
        hub: data.hub,
        token: data.token,
        rank: data.rank,
        timeoutMs: DEFAULT_TIMEOUT_MS,
        about: data.about,
      });
      task = table.task as TabTask;
      scope.postMessage({ type: "joined", table });
      return new Communicator(transport, new RankMemory(new RankHeap(createHeapMemory())));
    },
    fn: () => taskFunction(task!, data.channel),
    args: undefined,
  }, (report) => scope.postMessage({ type: "report", report }));
};
