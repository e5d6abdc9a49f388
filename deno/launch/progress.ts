/**
 * A process rank on a progress thread (`DCCL_PROGRESS=thread`, `--progress thread`): the rank's
 * communicator joins and runs in a worker of its own (progress_worker.ts), and the rank's thread
 * gets a ProgressCommunicator that forwards calls to it, so that calls progress while the rank
 * computes (primitives/communicator/progress_thread.ts).
 * @module
 */

import type { Communicator } from "../../primitives/communicator/communicator.ts";
import { startProgressThread } from "../../primitives/communicator/progress_thread.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";
import { RankMemory } from "../../primitives/memory/rank_memory.ts";
import { type TransportName, TRANSPORTS } from "../transport_table.ts";

/** Where a rank's calls progress: on its own thread as it awaits them, or on a progress thread. */
export const PROGRESS = ["inline", "thread"] as const;
/** One of {@linkcode PROGRESS}. */
export type Progress = typeof PROGRESS[number];

/** What a progress thread joins with: env_rank.ts's join options a progress thread takes. */
export interface ProgressJoinOptions {
  transport: TransportName;
  bind?: string;
  timeoutMs?: number;
}

/** Rank's thread → progress thread, once: what to join, and the heap the two share. */
export interface ProgressInit {
  env: Record<string, string | undefined>;
  options: ProgressJoinOptions;
  heap: WebAssembly.Memory;
}

/** Joins the group `env` describes on a progress thread; resolves with the rank's side of it. */
export function joinOnProgressThread(
  env: Record<string, string | undefined>,
  options: ProgressJoinOptions,
): Promise<Communicator> {
  const heap = createHeapMemory();
  const worker = new Worker(new URL("./progress_worker.ts", import.meta.url), { type: "module" });
  const init: ProgressInit = { env, options, heap };
  const memory = new RankMemory(new RankHeap(heap));
  return startProgressThread(worker, init, TRANSPORTS[options.transport], memory);
}
