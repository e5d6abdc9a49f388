/**
 * A rank's progress thread (progress.ts): joins the group as the rank, then serves the calls its
 * thread forwards (progress_server.ts). It neither watches the launcher nor binds to a CPU: the
 * rank's thread does both, and this one runs where the rank's computation is not.
 * @module
 */

import { serveProgress } from "../../primitives/communicator/progress_server.ts";
import type { ProgressPort } from "../../primitives/communicator/progress_thread.ts";
import { errorReport } from "../../primitives/errors.ts";
import { connectRank, rankFromEnv } from "./env_rank.ts";
import type { ProgressInit, ProgressJoin } from "./progress.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ProgressInit>) => void) | null;
  postMessage(join: ProgressJoin): void;
};

scope.onmessage = async ({ data }) => {
  scope.onmessage = null;
  let join: ProgressJoin;
  try {
    const comm = await connectRank(rankFromEnv(data.env), data.options);
    serveProgress(comm, data.heap, self as unknown as ProgressPort);
    join = {
      joined: { rank: comm.rank, size: comm.size, links: comm.links, members: comm.members },
    };
  } catch (e) {
    join = { failed: errorReport(e) };
  }
  scope.postMessage(join);
};
