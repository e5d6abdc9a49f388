// Rank program for the WGSL model against the JS reference: the same three steps (the last
// accumulating) on a GpuEngine and on a CpuEngine with the plain-JS kernels; returns the largest
// gradient and parameter differences and both engines' scores.
import type { Communicator } from "../../mod.ts";
import { CpuEngine } from "../../trainer/cpu_engine.ts";
import type { Engine } from "../../trainer/engine.ts";
import { GpuEngine } from "../../trainer/gpu_engine.ts";
import { loadMnistFolder } from "../../deno/files/mnist_folder.ts";
import { type Activation, MlpLayout } from "../../trainer/model.ts";
import { maxDiff } from "../_train.ts";

async function values(engine: Engine, which: "params" | "grads"): Promise<Float32Array> {
  const out = new Float32Array(engine[which].local.length);
  await engine[which].local.read(out);
  return out;
}

export async function run(comm: Communicator, args: { dir: string; activation: Activation }) {
  const mnist = await loadMnistFolder(args.dir);
  const layout = new MlpLayout([784, 24, 10]);
  const options = {
    activation: args.activation,
    rows: 16,
    lr: 0.1,
    momentum: 0.9,
    data: mnist.train.memory,
  };
  const gpu = await GpuEngine.create(comm, layout, { ...options, memory: "gpu" });
  const cpu = new CpuEngine(comm, layout, { ...options, memory: "shared", kernels: "js" });
  await gpu.initParams(5);
  await cpu.initParams(5);
  let grads = 0;
  for (let step = 0; step < 3; step++) {
    const rows = Array.from({ length: step === 2 ? 11 : 16 }, (_, i) => 97 * step + 13 * i);
    for (const e of [gpu, cpu]) {
      e.load(mnist.train, rows);
      e.trainStep(step === 2);
    }
    grads = Math.max(grads, maxDiff(await values(gpu, "grads"), await values(cpu, "grads")));
    for (const e of [gpu, cpu]) e.update(1);
  }
  for (const e of [gpu, cpu]) {
    e.load(mnist.test, Array.from({ length: 16 }, (_, i) => i));
    e.evaluate();
  }
  const params = maxDiff(await values(gpu, "params"), await values(cpu, "params"));
  const scores = [await gpu.takeScores(), await cpu.takeScores()];
  gpu.dispose();
  cpu.dispose();
  return { grads, params, scores };
}
