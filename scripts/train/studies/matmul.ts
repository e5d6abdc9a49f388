/**
 * `matmul` (the seeds' study 004): GEMM GFLOP/s against size for the trainer's WebAssembly and
 * WebGPU kernels, each as a share of its own peak measured in the same sitting (trainer/gemm_sweep.ts).
 * @module
 */

import type { MatmulArgs, MatmulResult } from "../../../trainer/gemm_sweep.ts";
import { pct, round, SCHEMA, type StudyContext, type StudyResult } from "./study.ts";

/** Square sizes of the sweep. */
const SIZES = [32, 64, 128, 256, 512, 1024];

export async function matmul(ctx: StudyContext): Promise<StudyResult> {
  const notes: string[] = [];
  const devices: MatmulArgs["device"][] = ["cpu"];
  if (ctx.noGpu) notes.push(`the device left out: ${ctx.noGpu}`);
  else devices.push("gpu");
  const module = new URL("../../../trainer/gemm_sweep.ts", import.meta.url);
  for (const device of devices) {
    const args: MatmulArgs = { device, sizes: SIZES, ms: 300 };
    const r = await ctx.measure<MatmulResult>(module, args, { gpu: device === "gpu" }, device);
    SIZES.forEach((n, i) =>
      ctx.record({
        device,
        kernels: r.kernels,
        n,
        gflops: round(r.gflops[i], 2),
        peak_gflops: round(r.peakGflops, 2),
        pct_of_peak: pct(r.gflops[i] / r.peakGflops),
      })
    );
  }
  notes.push(
    "C (n × n) = A · B in f32; the CPU's peak is one thread's WebAssembly SIMD FMAs, the " +
      "device's its FMAs on registers; the best of repeated rounds",
  );
  return {
    notes,
    chart: (rows) => ({
      $schema: SCHEMA,
      title: "GEMM against size: the trainer's kernels and their peaks",
      data: { values: rows },
      hconcat: [["gflops", "GFLOP/s"], ["pct_of_peak", "% of its peak"]].map(([field, title]) => ({
        width: 320,
        height: 240,
        mark: { type: "line", point: true },
        encoding: {
          x: { field: "n", type: "quantitative", scale: { type: "log", base: 2 }, title: "n" },
          y: {
            field,
            type: "quantitative",
            title,
            ...(field === "gflops" ? { scale: { type: "log" } } : {}),
          },
          color: { field: "device", type: "nominal" },
        },
      })),
    }),
  };
}
