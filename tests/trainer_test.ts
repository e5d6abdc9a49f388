// The trainer's correctness (issue: trainer): gradients against finite differences, the WASM
// model against the JS reference, data-parallel runs equal to one rank on the concatenated batch
// on every host transport, local-sgd with K=1 and the synchronous parameter server equal to
// allreduce, the asynchronous server converging, allreduce's hidden share reported, gradients in half precision training like f32,
// and a sanity accuracy on real MNIST.
import { assert_, assertEquals } from "./_assert.ts";
import { maxDiff, train } from "./_train.ts";
import { WasmMlpKernels } from "../trainer/kernels/mlp.ts";
import type { MlpKernels } from "../trainer/kernels/mlp_kernels.ts";
import { MLP_REFERENCE } from "../trainer/kernels/mlp_reference.ts";
import { createHeapMemory, RankHeap } from "../primitives/memory/heap.ts";
import { CpuModel } from "../trainer/cpu_model.ts";
import { type Activation, initParams, MlpLayout } from "../trainer/model.ts";
import { Random } from "../trainer/random.ts";
import { progressLine } from "../trainer/epochs.ts";

/** A small model with a random batch, on `kernels` (arrays in `heap` when given). */
function smallModel(kernels: MlpKernels, activation: Activation, heap?: RankHeap) {
  const layout = new MlpLayout([13, 9, 7, 5]);
  const model = new CpuModel(
    layout,
    kernels,
    (n) => heap ? heap.alloc("f32", n) as Float32Array : new Float32Array(n),
    { activation, rows: 6, momentum: false },
  );
  initParams(layout, model.params, 3);
  const random = new Random(11);
  for (let i = 0; i < model.input.length; i++) model.input[i] = random.uniform(-1, 1);
  model.labels.set([0, 4, 2, 2, 1, 3]);
  return model;
}

for (const activation of ["relu", "sigmoid"] as const) {
  Deno.test(`layer gradients equal finite differences of the loss: ${activation}`, () => {
    const model = smallModel(MLP_REFERENCE, activation);
    model.trainStep(6, false);
    const analytic = Float32Array.from(model.grads);
    const meanLoss = () => model.evaluate(6).loss / 6;
    const eps = 1e-3;
    let checked = 0;
    for (let i = 0; i < model.params.length; i++) {
      const p = model.params[i];
      model.params[i] = p + eps;
      const up = meanLoss();
      model.params[i] = p - eps;
      const down = meanLoss();
      model.params[i] = p;
      const numeric = (up - down) / (2 * eps);
      const g = analytic[i];
      assert_(
        Math.abs(numeric - g) <= 2e-3 + 0.02 * Math.abs(g),
        `parameter ${i}: backward ${g}, finite difference ${numeric}`,
      );
      if (Math.abs(g) > 1e-3) checked++;
    }
    assert_(checked > model.params.length / 4, `only ${checked} gradients are not ~0`);
  });

  Deno.test(`the WebAssembly model equals the JS reference model: ${activation}`, () => {
    const heap = new RankHeap(createHeapMemory());
    const wasm = smallModel(new WasmMlpKernels(heap), activation, heap);
    const ref = smallModel(MLP_REFERENCE, activation);
    for (let step = 0; step < 3; step++) {
      const a = wasm.trainStep(6, step === 2), b = ref.trainStep(6, step === 2);
      assert_(Math.abs(a.loss - b.loss) < 1e-5, `loss ${a.loss} vs ${b.loss}`);
      assertEquals(a.correct, b.correct);
      assert_(
        maxDiff(wasm.grads, ref.grads) < 1e-5,
        `gradients differ by ${maxDiff(wasm.grads, ref.grads)}`,
      );
      wasm.update(0.5, 0, 1);
      ref.update(0.5, 0, 1);
    }
    assert_(maxDiff(wasm.params, ref.params) < 1e-5);
  });
}

/** Parameters after training 512 images for one epoch at a global batch of 32 and `flags`. */
const QUICK = { "train-samples": "512", "test-samples": "100", epochs: "1" };
/** Float rounding of sums taken in another order; a 0.1% change of lr moves them by ~4e-4. */
const SAME = 1e-6;

async function assertSameAsOneRank(flags: Record<string, string>, ranks: number, what: string) {
  const [one] = await train({ ...QUICK, procs: "1", batch: "32", ...flags });
  const many = await train({ ...QUICK, procs: String(ranks), batch: String(32 / ranks), ...flags });
  assertEquals(many.length, ranks);
  for (const [r, result] of many.entries()) {
    const d = maxDiff(result.params!, one.params!);
    assert_(d < SAME, `${what}: rank ${r}'s parameters differ from one rank's by ${d}`);
  }
}

for (const [transport, ranks] of [["shm", 4], ["worker", 4], ["ws", 2], ["tcp", 2]] as const) {
  Deno.test(`allreduce every batch on ${ranks} ranks equals one rank on the whole batch: ${transport}`, () =>
    assertSameAsOneRank({ transport }, ranks, transport));
}

Deno.test("allreduce with momentum, accumulation over 2 batches and host slabs equals one rank", () =>
  assertSameAsOneRank(
    { momentum: "0.9", "sync-every": "2", memory: "host", "bucket-mb": "0.001" },
    2,
    "momentum, K=2, host memory, one bucket per layer",
  ));

Deno.test("local-sgd averaging every batch equals allreduce (no momentum)", async () => {
  const [one] = await train({ ...QUICK, procs: "1", batch: "32" });
  const local = await train({ ...QUICK, procs: "4", batch: "8", sync: "local-sgd" });
  for (const r of local) assert_(maxDiff(r.params!, one.params!) < SAME);
});

Deno.test("the synchronous parameter server equals allreduce over its workers", async () => {
  const [one] = await train({ ...QUICK, procs: "1", batch: "32" });
  // Rank 0 serves; 4 workers take 8 rows each.
  const ps = await train({ ...QUICK, procs: "5", batch: "8", sync: "ps" });
  for (const r of ps) assert_(maxDiff(r.params!, one.params!) < SAME);
});

Deno.test("the asynchronous parameter server converges and reports staleness", async () => {
  const [server] = await train({
    "train-samples": "6000",
    "test-samples": "1000",
    epochs: "2",
    procs: "3",
    batch: "32",
    sync: "ps",
    "ps-mode": "async",
  });
  const last = server.summary!.epochs.at(-1)!;
  assert_(last.test_acc >= 0.85, `test accuracy ${last.test_acc}`);
  assert_(last.staleness_mean !== undefined && last.staleness_mean >= 0);
  assert_(last.staleness_max !== undefined && last.staleness_max >= last.staleness_mean!);
});

Deno.test("allreduce reports the share of its communication the backward hid; local-sgd, which has none, does not", async () => {
  const flags = { ...QUICK, epochs: "2", procs: "2", batch: "16", transport: "tcp" };
  const [rank0] = await train(flags);
  const { epochs, hidden_pct } = rank0.summary!;
  for (const row of epochs) {
    const hidden = row.hidden_pct;
    assert_(hidden !== undefined && hidden >= 0 && hidden <= 100, `epoch ${row.epoch}: ${hidden}`);
  }
  const mean = epochs.reduce((s, r) => s + r.hidden_pct!, 0) / epochs.length;
  assert_(Math.abs(hidden_pct! - mean) < 1e-9, `summary ${hidden_pct}, epochs' mean ${mean}`);
  const [local] = await train({ ...flags, sync: "local-sgd" });
  assertEquals(local.summary!.epochs.map((r) => r.hidden_pct), [undefined, undefined]);
  assertEquals(local.summary!.hidden_pct, undefined);
});

Deno.test("gradients in f16 and bf16 train like f32: every rank in step, accuracy within a point, parameters apart", async () => {
  const flags = { "train-samples": "6000", "test-samples": "1000", epochs: "1", procs: "2" };
  const [f32] = await train(flags);
  for (const dtype of ["f16", "bf16"]) {
    for (const feedback of [{}, { "error-feedback": "true" }] as Record<string, string>[]) {
      const what = `${dtype}${"error-feedback" in feedback ? " with error feedback" : ""}`;
      const [rank0, rank1] = await train({ ...flags, "grad-dtype": dtype, ...feedback });
      assertEquals(maxDiff(rank0.params!, rank1.params!), 0, `${what}: ranks differ`);
      // Rounded gradients move the parameters off the f32 run's, but not its accuracy.
      const moved = maxDiff(rank0.params!, f32.params!);
      assert_(moved > 0 && moved < 0.05, `${what}: parameters ${moved} from f32's`);
      const [a, b] = [rank0, f32].map((r) => r.summary!.final_test_acc);
      assert_(Math.abs(a - b) <= 0.01, `${what}: test accuracy ${a} against f32's ${b}`);
    }
  }
});

Deno.test("one epoch on 20000 MNIST images reaches 90% test accuracy", async () => {
  const [rank0] = await train({
    "train-samples": "20000",
    "test-samples": "2000",
    epochs: "1",
    momentum: "0.9",
  });
  const [epoch] = rank0.summary!.epochs;
  assert_(epoch.test_acc >= 0.9, `test accuracy ${epoch.test_acc}`);
  assert_(epoch.train_acc > 0.5 && epoch.loss > 0 && epoch.time_s > 0);
  assert_(epoch.compute_s > 0 && epoch.comm_s > 0 && epoch.wait_s >= 0);
});

Deno.test("the progress bar shows the running loss and the time left at the pace so far", () => {
  // A quarter of the run (epoch 1 of 2, half its steps) took 10 s: 30 s are left.
  assertEquals(
    progressLine({ epoch: 0, step: 50, steps: 100, epochs: 2, loss: 0.31234, elapsedMs: 10_000 }),
    "[###############...............] epoch 1/2, step 50/100, loss 0.3123, ETA 30s",
  );
  assertEquals(
    progressLine({ epoch: 1, step: 10, steps: 100, epochs: 2, elapsedMs: 55_000 }).endsWith(
      "ETA 45s",
    ),
    true,
  );
  assertEquals(
    progressLine({ epoch: 0, step: 1, steps: 1000, epochs: 10, loss: 2.3, elapsedMs: 1_000 })
      .endsWith("loss 2.3000, ETA 166m39s"),
    true,
  );
  assertEquals(
    progressLine({ epoch: 0, step: 0, steps: 100, epochs: 1, elapsedMs: 0 }),
    `[${".".repeat(30)}] epoch 1/1, step 0/100`,
  );
});
