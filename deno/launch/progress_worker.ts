/**
 * A rank's progress thread (progress.ts): joins the group as the rank, then serves the calls its
 * thread forwards (progress_server.ts). It neither watches the launcher nor binds to a CPU: the
 * rank's thread does both, and this one leaves the rank's CPU to run where its computation is not.
 * @module
 */

import { serveProgress } from "../../primitives/communicator/progress_server.ts";
import {
  joinedAs,
  type ProgressJoin,
  type ProgressPort,
} from "../../primitives/communicator/progress_thread.ts";
import { errorReport } from "../../primitives/errors.ts";
import { connectRank, rankFromEnv } from "./env_rank.ts";
import { unbindFromRank } from "../platform/scheduler_calls.ts";
import type { ProgressInit } from "./progress.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ProgressInit>) => void) | null;
  postMessage(join: ProgressJoin): void;
};

scope.onmessage = async ({ data }) => {
  scope.onmessage = null;
  let join: ProgressJoin;
  try {
    // Started by a bound rank's thread, it would share its one CPU.
    unbindFromRank();
    const comm = await connectRank(rankFromEnv(data.env), data.options);
    serveProgress(comm, data.heap, self as unknown as ProgressPort);
    join = joinedAs(comm);
  } catch (e) {
    join = { failed: errorReport(e) };
  }
  scope.postMessage(join);
};
