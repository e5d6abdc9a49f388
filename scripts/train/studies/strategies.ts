/**
 * `strategies`: allreduce (its gradients in f32, f16 and bf16), local-sgd (K = 8), ps sync and ps
 * async at 2 and 4 ranks, on the CPU and (on a hardware adapter) the GPU, where gradients stay in
 * f32.
 * @module
 */

import { TRANSPORT_TABLE } from "../../../deno/mod.ts";
import { barChart, pct, round, type StudyContext, type StudyResult } from "./study.ts";

const KINDS: [string, Record<string, string>][] = [
  ["allreduce", { sync: "allreduce" }],
  ["allreduce f16", { sync: "allreduce", "grad-dtype": "f16" }],
  ["allreduce bf16", { sync: "allreduce", "grad-dtype": "bf16" }],
  ["local-sgd (K=8)", { sync: "local-sgd", "sync-every": "8" }],
  ["ps sync", { sync: "ps" }],
  ["ps async", { sync: "ps", "ps-mode": "async" }],
];

export async function strategies(ctx: StudyContext): Promise<StudyResult> {
  const notes: string[] = [];
  const devices = ctx.noGpu ? ["cpu"] : ["cpu", "gpu"];
  if (ctx.noGpu) notes.push(`gpu runs left out: ${ctx.noGpu}`);
  for (const device of devices) {
    for (const procs of [2, 4]) {
      // Device slabs carry no half precision (the device kernels take f32 and i32).
      for (const [name, flags] of KINDS.filter(([, f]) => device === "cpu" || !f["grad-dtype"])) {
        // GPU ranks are logical ranks on the one device (a thread transport).
        const where: Record<string, string> = device === "gpu"
          ? { device, transport: TRANSPORT_TABLE.launching("thread")[0] }
          : {};
        const s = await ctx.train(
          { ...flags, ...where, procs: String(procs) },
          `${name}, ${procs} ranks, ${device}`,
        );
        const last = s.epochs.at(-1)!;
        ctx.record({
          device,
          procs,
          strategy: name,
          time_s: round(s.train_s, 2),
          comm_s: round(s.epochs.reduce((t, e) => t + e.comm_s, 0), 2),
          test_acc_pct: pct(s.final_test_acc),
          staleness_mean: last.staleness_mean === undefined ? "" : round(last.staleness_mean, 2),
        });
      }
    }
  }
  notes.push("ps: rank 0 serves, the other ranks compute (so 2 ranks train on one worker)");
  notes.push(
    "allreduce f16, bf16: gradients rounded to half precision and allreduced as such (PyTorch " +
      "DDP's compression hooks); on the gpu they stay f32",
  );
  return {
    notes,
    chart: (rows) =>
      barChart(
        rows,
        "strategy",
        "time_s",
        "procs",
        "device",
        "time (s)",
        "Training time by synchronisation strategy and rank count",
      ),
  };
}
