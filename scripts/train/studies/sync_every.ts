/**
 * `sync-every`: local-sgd averaging every K ∈ {1, 8, 64, 512, epoch} batches × 2, 4, 8 ranks, with
 * the allreduce calls each run made (the seed study's Table 5.1: they fall as 1/K) and a one-rank
 * run as the accuracy baseline.
 * @module
 */

import type { TopLevelSpec } from "vega-lite";
import { accuracyScale, pct, round, SCHEMA, type StudyContext, type StudyResult } from "./study.ts";

export async function syncEvery(ctx: StudyContext): Promise<StudyResult> {
  const alone = await ctx.train({ procs: "1" }, "1 rank (the baseline)");
  const baseline = pct(alone.final_test_acc);
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
        allreduce_calls: s.allreduce_calls,
        test_acc_pct: pct(s.final_test_acc),
      });
    }
  }
  return {
    notes: [
      "local-sgd: each rank steps on its shard; parameters averaged every K batches",
      `1 rank (no averaging): test accuracy ${baseline.toFixed(2)}% in ${
        alone.train_s.toFixed(2)
      } s`,
    ],
    chart: (rows) =>
      ({
        $schema: SCHEMA,
        title: `Local SGD: averaging every K batches (dashed: 1 rank, ${baseline.toFixed(2)}%)`,
        data: { values: rows.map((r) => ({ ...r, procs: `${r.procs} ranks` })) },
        hconcat: (["time_s", "allreduce_calls", "test_acc_pct"] as const).map((y) => ({
          width: 260,
          height: 240,
          layer: [
            {
              mark: { type: "line", point: true },
              encoding: {
                x: {
                  field: "sync_every",
                  type: "ordinal",
                  sort: null,
                  title: "average every K batches",
                },
                y: {
                  field: y,
                  type: "quantitative",
                  scale: y === "allreduce_calls"
                    ? { type: "log" }
                    : y === "test_acc_pct"
                    ? accuracyScale([...rows, { test_acc_pct: baseline }], "test_acc_pct")
                    : { zero: false },
                  title: y === "time_s"
                    ? "time (s)"
                    : y === "allreduce_calls"
                    ? "allreduce calls (log)"
                    : "test accuracy (%)",
                },
                color: { field: "procs", type: "nominal", title: null },
                shape: { field: "procs", type: "nominal", title: null },
              },
            },
            ...(y === "test_acc_pct"
              ? [{
                data: { values: [{ baseline }] },
                mark: { type: "rule", strokeDash: [4, 4], color: "gray" },
                encoding: { y: { field: "baseline", type: "quantitative" } },
              }]
              : []),
          ],
        })),
      }) as TopLevelSpec,
  };
}
