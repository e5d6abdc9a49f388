/**
 * `memory`: one run with shared, host and managed slabs (and gpu slabs on a hardware adapter),
 * each timed against the shared one.
 * @module
 */

import { barChart, pct, round, type StudyContext, type StudyResult } from "./study.ts";

export async function memory(ctx: StudyContext): Promise<StudyResult> {
  const notes: string[] = [];
  // Shared first: every other kind's speed is relative to it.
  const kinds = ["shared", "host"];
  if (ctx.noAdapter) notes.push(`managed slabs left out: ${ctx.noAdapter}`);
  else kinds.push("managed");
  if (ctx.noGpu) notes.push(`gpu slabs left out: ${ctx.noGpu}`);
  else kinds.push("gpu");
  let shared = 0;
  for (const kind of kinds) {
    const s = await ctx.train({ memory: kind }, `${kind} slabs`);
    if (kind === "shared") shared = s.train_s;
    ctx.record({
      memory: kind,
      time_s: round(s.train_s, 2),
      comm_s: round(s.epochs.reduce((t, e) => t + e.comm_s, 0), 2),
      relative_speed: round(shared / s.train_s, 2),
      test_acc_pct: pct(s.final_test_acc),
    });
  }
  notes.push("2 ranks on shm; the model computes in the heap, copies to and from other kinds");
  return {
    notes,
    chart: (rows) =>
      barChart(
        rows,
        "memory",
        "time_s",
        "memory",
        undefined,
        "time (s)",
        "Training time by the memory kind of the collectives' slabs (2 ranks, shm)",
      ),
  };
}
