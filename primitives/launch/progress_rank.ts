/**
 * A workers transport rank's progress thread (`progress: "thread"` on `shm`): the rank's worker
 * starts it (worker_rank.ts), and it joins the rank's group in the rank's place, on the rank's
 * heap, then serves the calls the rank's thread forwards (progress_server.ts), so that a call's
 * copies and reductions go on while the rank computes. It loads the rank's runtime, which lets it
 * leave the CPU its rank is bound to: it runs where the rank's computation is not.
 * @module
 */

import { Communicator } from "../communicator/communicator.ts";
import { serveProgressThread } from "../communicator/progress_server.ts";
import { PROGRESS_SCRATCH_FROM, RankHeap } from "../memory/heap.ts";
import { RankMemory } from "../memory/rank_memory.ts";
import { WEB_TRANSPORTS } from "../registry.ts";
import { loadRuntime } from "./runtime.ts";

/** Rank's thread → its progress thread, once: what the rank joins with. */
export interface ProgressRankInit {
  rank: number;
  transport: string;
  /** What the transport's descriptor prepared for the rank, and every rank's heap. */
  handed: unknown;
  heaps: WebAssembly.Memory[];
  /** The rank's heap in `heaps`. */
  slot: number;
  timeoutMs: number;
  runtime?: string;
}

serveProgressThread<ProgressRankInit>(async (init) => {
  (await loadRuntime(init.runtime)).startProgress?.();
  const { rank, handed, heaps, timeoutMs } = init;
  // The rank's buffers lie below; the scratch of the calls made here, above.
  const heap = new RankHeap(heaps[init.slot], { from: PROGRESS_SCRATCH_FROM });
  const transport = WEB_TRANSPORTS.launchedAs(init.transport, "workers")
    .join(rank, { handed, heaps, heap, timeoutMs });
  return { comm: new Communicator(transport, new RankMemory(heap)), heap: heaps[init.slot] };
});
