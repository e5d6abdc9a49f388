// The trainer on WebGPU: the WGSL model against the JS reference, and data-parallel training on
// the gpu transport equal to one rank (a small hidden layer: CI's software adapter is slow).
import { assert_, assertEquals } from "./_assert.ts";
import { gpuTest } from "./_gpu.ts";
import { maxDiff, MNIST_DIR, train } from "./_train.ts";
import { launchGroup } from "../deno/launch/group.ts";
import type { Score } from "../trainer/engine.ts";

const RANK = new URL("./ranks/train_gpu_rank.ts", import.meta.url);

for (const activation of ["relu", "sigmoid"] as const) {
  gpuTest(`the WGSL model equals the JS reference: ${activation}`, async () => {
    type Result = { grads: number; params: number; scores: { train: Score; eval: Score }[] };
    const [r] = await launchGroup<Result>(RANK, {
      size: 1,
      transport: "gpu",
      args: { dir: MNIST_DIR, activation },
    }).results;
    assert_(r.grads < 1e-5, `gradients differ by ${r.grads}`);
    assert_(r.params < 1e-5, `parameters differ by ${r.params}`);
    const [gpu, cpu] = r.scores;
    assertEquals([gpu.train.rows, gpu.eval.rows], [43, 16]);
    assertEquals([gpu.train.correct, gpu.eval.correct], [cpu.train.correct, cpu.eval.correct]);
    assert_(Math.abs(gpu.train.loss - cpu.train.loss) < 1e-4 * cpu.train.loss);
    assert_(Math.abs(gpu.eval.loss - cpu.eval.loss) < 1e-4 * cpu.eval.loss);
  });
}

gpuTest("allreduce on the gpu transport equals one rank on the whole batch", async () => {
  const flags = {
    "train-samples": "128",
    "test-samples": "32",
    epochs: "1",
    layers: "784,16,10",
    device: "gpu",
    transport: "gpu",
    momentum: "0.9",
  };
  const [one] = await train({ ...flags, procs: "1", batch: "32" });
  const two = await train({ ...flags, procs: "2", batch: "16" });
  for (const r of two) assert_(maxDiff(r.params!, one.params!) < 1e-6);
  assertEquals(two[0].summary!.kernels, "wgsl");
});
