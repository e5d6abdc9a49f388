/**
 * `batch`: batch 16 and 512 on the CPU and the GPU: the training run, and the per-batch breakdown
 * into upload, kernels and download.
 * @module
 */

import { TRANSPORT_TABLE } from "../../../deno/mod.ts";
import { pct, round, SCHEMA, type StudyContext, type StudyResult } from "./study.ts";

export async function batch(ctx: StudyContext): Promise<StudyResult> {
  const notes: string[] = [];
  const devices = ctx.noGpu ? ["cpu"] : ["cpu", "gpu"];
  if (ctx.noGpu) notes.push(`gpu runs left out: ${ctx.noGpu}`);
  for (const device of devices) {
    for (const size of ["16", "512"]) {
      const flags: Record<string, string> = { device, batch: size, procs: "1" };
      if (device === "gpu") flags.transport = TRANSPORT_TABLE.launching("thread")[0];
      const label = `${device}, batch ${size}`;
      const s = await ctx.train(flags, label);
      const b = await ctx.breakdown(flags, `${label} breakdown`);
      ctx.record({
        device,
        batch: Number(size),
        time_s: round(s.train_s, 2),
        test_acc_pct: pct(s.final_test_acc),
        upload_ms: round(b.upload_ms, 4),
        kernels_ms: round(b.kernels_ms, 4),
        download_ms: round(b.download_ms, 3),
        samples_per_s: Math.round(Number(size) / (b.upload_ms + b.kernels_ms) * 1000),
      });
    }
  }
  notes.push(
    "per batch: upload = gather + hand to the device (the CPU: gather only); kernels = step + " +
      "update; download = one read of the scores (training reads them once per epoch)",
  );
  return {
    notes,
    chart: (rows) => ({
      $schema: SCHEMA,
      title: "Time per sample of a batch: upload, kernels and the scores' download",
      data: {
        values: rows.flatMap((r) =>
          (["upload_ms", "kernels_ms", "download_ms"] as const).map((phase) => ({
            run: `${r.device}, batch ${r.batch}`,
            phase: phase === "download_ms"
              ? "download (once per epoch in training)"
              : phase.replace("_ms", ""),
            ms_per_sample: Number(r[phase]) / Number(r.batch),
          }))
        ),
      },
      width: 360,
      height: 240,
      mark: "bar",
      encoding: {
        x: { field: "run", type: "nominal", title: null },
        y: { field: "ms_per_sample", type: "quantitative", title: "ms per sample" },
        color: { field: "phase", type: "nominal", title: null },
      },
    }),
  };
}
