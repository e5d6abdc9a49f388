// The speedup study's arithmetic and chart: Amdahl's serial fraction fitted only over two or more
// runs with a core per rank and held to [0, 1]; the chart has a title, the ideal lines and integer
// rank ticks. The matmul study's rank program on the CPU and on the device.
import { assert_, assertEquals } from "./_assert.ts";
import { amdahlFit, speedupChart } from "../scripts/train/studies/speedup.ts";
import { accuracyScale } from "../scripts/train/studies/study.ts";
import { specToSvg } from "../bench/compare/chart.ts";
import { launchGroup } from "../deno/launch/group.ts";
import type { MatmulArgs, MatmulResult } from "../trainer/gemm_sweep.ts";
import { gpuTest } from "./_gpu.ts";

/** Times of a program whose serial fraction is `f`, at 1, 2, 4 and 8 ranks. */
const amdahl = (f: number, t1 = 10): [number, number][] =>
  [1, 2, 4, 8].map((p) => [p, t1 * (f + (1 - f) / p)]);

Deno.test("speedup: Amdahl's fit recovers the serial fraction, over ranks with a core each", () => {
  assertEquals(Number(amdahlFit(amdahl(0.2), 8)!.toFixed(6)), 0.2);
  // 8 ranks on 4 cores ran 4x slower than Amdahl: ignored when the machine has 4 cores.
  const crowded = amdahl(0.2).map(([p, t]) => [p, p > 4 ? t * 4 : t] as [number, number]);
  assertEquals(Number(amdahlFit(crowded, 4)!.toFixed(6)), 0.2);
  assert_(amdahlFit(crowded, 8)! > 0.5, "fitted over the crowded runs too, it would be far off");
  // One rank count with a core per rank fits any fraction: no fit (2 cores: only 2 ranks).
  assertEquals(amdahlFit(crowded, 2), undefined);
  // Superlinear runs would give a negative fraction, slow ones more than 1: held to [0, 1].
  assertEquals(amdahlFit([[1, 10], [2, 4], [4, 2]], 4), 0);
  assertEquals(amdahlFit([[1, 10], [2, 30], [4, 30]], 4), 1);
  assertEquals(amdahlFit([[1, 10], [4, 3]], 2), undefined);
});

Deno.test("speedup: the chart has a title, ideal lines and integer rank ticks", async () => {
  const rows = amdahl(0.2).flatMap(([p, t]) =>
    ["shm", "ws"].map((transport) => ({
      transport,
      procs: p,
      speedup: 10 / t,
      efficiency: 10 / t / p,
    }))
  );
  const spec = speedupChart(rows) as unknown as { title: string; hconcat: unknown[] };
  assert_(spec.title.includes("speedup"), spec.title);
  assertEquals(spec.hconcat.length, 2);
  const svg = await specToSvg(speedupChart(rows));
  assert_(svg.includes("Training speedup"), "the title is drawn");
  assert_(!/>\s*1\.5\s*</.test(svg), "no fractional rank ticks");
});

Deno.test("study charts: an accuracy axis spans at least 10 points, within 0–100", () => {
  const rows = (values: number[]) => values.map((test_acc_pct) => ({ test_acc_pct }));
  // Runs 0.4 points apart: not a cliff.
  assertEquals(accuracyScale(rows([97.6, 98.0]), "test_acc_pct").domain, [90, 100]);
  assertEquals(accuracyScale(rows([40.8, 68.0, 89.8]), "test_acc_pct").domain, [40, 90]);
  assertEquals(accuracyScale(rows([2, 3]), "test_acc_pct").domain, [0, 10]);
});

Deno.test("matmul: the sweep times the trainer's WebAssembly GEMM at each size against the SIMD peak", async () => {
  const module = new URL("../trainer/gemm_sweep.ts", import.meta.url);
  const args: MatmulArgs = { device: "cpu", sizes: [16, 64], ms: 20 };
  const [r] = await launchGroup<MatmulResult>(module, { size: 1, transport: "shm", args }).results;
  assert_(/^WebAssembly \((relaxed|plain) SIMD\)$/.test(r.kernels), r.kernels);
  assertEquals(r.gflops.length, 2);
  // Both are timed beside the suite's other tests: only a unit's error (×1000) is caught here.
  assert_(
    r.peakGflops > 0 && r.gflops.every((g) => g > 0 && g < 20 * r.peakGflops),
    `${r.gflops} against a peak of ${r.peakGflops}`,
  );
});

gpuTest(
  "matmul: the sweep times the trainer's WGSL GEMM against the device's FMA peak",
  async () => {
    const module = new URL("../trainer/gemm_sweep.ts", import.meta.url);
    const args: MatmulArgs = { device: "gpu", sizes: [16], ms: 10 };
    const [r] = await launchGroup<MatmulResult>(module, {
      size: 1,
      transport: "shm",
      args,
      gpu: true,
    })
      .results;
    assert_(r.kernels.startsWith("WGSL on "), r.kernels);
    assert_(r.peakGflops > 0 && r.gflops[0] > 0, `${r.gflops} of ${r.peakGflops}`);
  },
);
