/**
 * `sync-every`: local-sgd averaging every K ∈ {1, 8, 64, 512, epoch} batches × 2, 4, 8 ranks.
 * @module
 */

import { pct, round, SCHEMA, type StudyContext, type StudyResult } from "./study.ts";

export async function syncEvery(ctx: StudyContext): Promise<StudyResult> {
  for (const procs of [2, 4, 8]) {
    for (const every of ["1", "8", "64", "512", "epoch"]) {
      const s = await ctx.train(
        { procs: String(procs), sync: "local-sgd", "sync-every": every },
        `local-sgd every ${every}, ${procs} ranks`,
      );
      ctx.record({
        procs,
        sync_every: every,
        time_s: round(s.train_s, 2),
        comm_s: round(s.epochs.reduce((t, e) => t + e.comm_s, 0), 2),
        test_acc_pct: pct(s.final_test_acc),
      });
    }
  }
  return {
    notes: ["local-sgd: each rank steps on its shard; parameters averaged every K batches"],
    chart: (rows) => ({
      $schema: SCHEMA,
      data: { values: rows.map((r) => ({ ...r, procs: `${r.procs} ranks` })) },
      hconcat: (["time_s", "test_acc_pct"] as const).map((y) => ({
        width: 320,
        height: 240,
        mark: { type: "line", point: true },
        encoding: {
          x: { field: "sync_every", type: "ordinal", sort: null, title: "average every K batches" },
          y: {
            field: y,
            type: "quantitative",
            scale: { zero: false },
            title: y === "time_s" ? "time (s)" : "test accuracy (%)",
          },
          color: { field: "procs", type: "nominal", title: null },
        },
      })),
    }),
  };
}
