/**
 * A rank's progress thread (progress.ts): joins the group as the rank, then serves the calls its
 * thread forwards (progress_server.ts). It neither watches the launcher nor binds to a CPU: the
 * rank's thread does both, and this one leaves the rank's CPU to run where its computation is not.
 * @module
 */

import { serveProgressThread } from "../../primitives/communicator/progress_server.ts";
import { connectRank, rankFromEnv } from "./env_rank.ts";
import { unbindFromRank } from "../platform/scheduler_calls.ts";
import type { ProgressInit } from "./progress.ts";

serveProgressThread<ProgressInit>(async (init) => {
  // Started by a bound rank's thread, it would share its one CPU.
  unbindFromRank();
  return { comm: await connectRank(rankFromEnv(init.env), init.options), heap: init.heap };
});
