// Checkpoints (deno/files/checkpoint.ts) and elastic restarts (`--max-restarts`): a run killed in the
// middle of an epoch and resumed from its last checkpoint ends with the very parameters of a run
// never stopped, bit for bit; the CLI restarts a group whose rank died and finishes with the
// uninterrupted run's accuracy; bad checkpoint flags are one line.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { MNIST, MNIST_DIR } from "./_train.ts";
import { parseFlags } from "../scripts/common/flags.ts";
import {
  planTraining,
  runTraining,
  startTraining,
  TRAIN_FLAGS,
} from "../scripts/train/training.ts";
import type { CheckpointMeta } from "../deno/files/checkpoint.ts";

const QUICK = ["--train-samples", "1200", "--test-samples", "200", "--batch", "20"];
/** 300 steps an epoch: long enough to stop a run in the middle of one. */
const LONGER = ["--train-samples", "12000", "--test-samples", "200", "--batch", "20"];
const METADATA = JSON.parse(JSON.stringify({ options: {} }));
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

const plan = (argv: string[]) => planTraining(parseFlags(TRAIN_FLAGS, argv), MNIST);

function meta(dir: string): CheckpointMeta | undefined {
  try {
    return JSON.parse(Deno.readTextFileSync(`${dir}/checkpoint.json`));
  } catch {
    return undefined;
  }
}

async function until(what: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 5));
  }
}

// bf16 gradients with error feedback: the residual each rank carries is checkpointed too;
// reproducible gradients sum every batch.
const RUNS: [string, string[]][] = [
  ["allreduce", []],
  ["local-sgd", []],
  ["allreduce", ["--grad-dtype", "bf16", "--error-feedback"]],
  ["allreduce", ["--reproducible", "--sync-every", "1"]],
];
for (const [sync, extra] of RUNS) {
  Deno.test(`checkpoint: a run killed mid-epoch and resumed equals one never stopped, bit for bit: ${sync} ${extra.join(" ")}`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      const flags = [
        ...["--procs", "2", "--transport", "shm", "--sync", sync, "--epochs", "2"],
        ...["--momentum", "0.9", "--sync-every", "2", ...LONGER, ...extra],
      ];
      const out = { metadata: METADATA, print: false, returnParams: true };
      const whole = await runTraining(await plan(flags), out);

      const saving = [...flags, "--checkpoint", dir, "--checkpoint-every", "4"];
      const group = startTraining(await plan(saving), out);
      // Stop in the second epoch, past a mid-epoch checkpoint.
      await until(() => (meta(dir)?.epoch ?? 0) === 1 && meta(dir)!.step >= 4);
      group.kill(1);
      await assertRejects(() => group.results, { name: "RankFailedError" });
      const at = meta(dir)!;
      assertEquals([at.epoch, at.step % 4, at.rows.length], [1, 0, 1]);
      // Each rank file carries the ms its rank had spent in the epoch (after the score).
      const head = await Deno.readFile(`${dir}/${at.files[0].name}`);
      const carried = new Float64Array(head.buffer, 0, 4)[3];
      assert_(carried > 0, `the epoch's time so far: ${carried} ms`);

      const resumed = await runTraining(await plan([...saving, "--resume"]), out);
      // Counted, not diffed: a diff of two 200k-element arrays takes minutes to print.
      for (const [r, { params }] of resumed.entries()) {
        const differ = params!.filter((v, i) => !Object.is(v, whole[r].params![i])).length;
        assertEquals(differ, 0, `rank ${r}: parameters that differ from the run never stopped`);
      }
      const [a, b] = [whole[0].summary!.epochs, resumed[0].summary!.epochs];
      // The resumed epoch's time covers it whole, the part before the checkpoint included.
      assert_(b[1].time_s * 1000 >= carried, `${b[1].time_s} s < ${carried} ms carried`);
      assertEquals(b.map((r) => [r.loss, r.test_acc]), a.map((r) => [r.loss, r.test_acc]));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("checkpoint: bad checkpoint flags and checkpoints of another run are one line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const refused = async (argv: string[], message: RegExp) => {
      await assertRejects(() => plan([...QUICK, ...argv]), { name: "UsageError", message });
    };
    await refused(["--resume"], /--resume is not accepted without --checkpoint DIR/);
    await refused(["--checkpoint-every", "5"], /without --checkpoint/);
    // torchrun's habit: a job that always says --resume starts fresh the first time, saying so.
    const fresh = await plan([...QUICK, "--checkpoint", dir, "--resume"]);
    assertEquals(fresh.config.resume, undefined);
    assertEquals(fresh.notes, [`--resume: ${dir} holds no checkpoint yet; starting fresh`]);
    await refused(["--checkpoint", dir, "--resume-previous"], /--resume-previous: .* holds no/);
    await refused(
      ["--checkpoint", dir, "--checkpoint-every", "5", "--sync", "ps", "--procs", "3"],
      /--checkpoint-every 5 is not accepted with --sync ps/,
    );
    await refused(["--checkpoint", dir, "--checkpoint-every", "0"], /--checkpoint-every 0/);
    await refused(
      ["--max-restarts", "2", "--launcher", "env"],
      /--max-restarts 2 is not accepted with --launcher env/,
    );
    // One epoch of a run, then a resume with other settings.
    const out = { metadata: METADATA, print: false };
    await runTraining(await plan([...QUICK, "--epochs", "1", "--checkpoint", dir]), out);
    assertEquals([meta(dir)!.epoch, meta(dir)!.step], [1, 0]);
    await refused(
      ["--epochs", "2", "--checkpoint", dir, "--resume", "--lr", "0.5"],
      /holds a run with lr 0\.1; this run has 0\.5/,
    );
    // The same settings with more epochs go on from it.
    const more = await runTraining(
      await plan([...QUICK, "--epochs", "2", "--checkpoint", dir, "--resume"]),
      out,
    );
    assertEquals(more[0].summary!.epochs.map((r) => r.epoch), [1, 2]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpoint: --max-restarts starts the group again from its checkpoint and finishes as if never stopped", async () => {
  const dir = await Deno.makeTempDir();
  const script = new URL("../scripts/train.ts", import.meta.url).pathname;
  try {
    const args = [
      ...["run", "-A", script, "--transport", "tcp", "--procs", "2", "--epochs", "2", ...LONGER],
      ...["--data", MNIST_DIR, "--checkpoint", `${dir}/ckpt`, "--checkpoint-every", "5"],
      ...["--max-restarts", "1"],
    ];
    const child = new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped" })
      .spawn();
    // Kill rank 1's process once a mid-epoch checkpoint of the second epoch is committed.
    await until(() => (meta(`${dir}/ckpt`)?.epoch ?? 0) === 1 && meta(`${dir}/ckpt`)!.step >= 5);
    const rank1 = rankProcess(1, `${dir}/ckpt`);
    Deno.kill(rank1, "SIGKILL");
    const { code, stdout, stderr } = await child.output();
    const err = decode(stderr), text = decode(stdout);
    assertEquals(code, 0, err);
    assert_(
      /Rank 1 failed.*; restart 1 of 1 from the checkpoint at epoch 2, step \d+/.test(err),
      err,
    );
    assert_(/# resumed from .* at epoch 2, step \d+/.test(text), text);
    const accuracy = (s: string) => Number(s.match(/test accuracy (\d+\.\d+)%/)![1]);
    const whole = await runTraining(
      await plan([...LONGER, "--transport", "tcp", "--procs", "2", "--epochs", "2"]),
      { metadata: METADATA, print: false },
    );
    assertEquals(accuracy(text), Number((100 * whole[0].summary!.final_test_acc).toFixed(2)));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The pid of rank `rank`'s process in the run checkpointing into `dir` (its arguments file names
 * the folder; tests beside this one run rank processes of their own).
 */
function rankProcess(rank: number, dir: string): number {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const env = Deno.readTextFileSync(`/proc/${entry.name}/environ`).split("\0");
      const argsFile = env.find((e) => e.startsWith("DCCL_ARGS_FILE="))?.slice(15);
      if (!env.includes(`RANK=${rank}`) || !argsFile) continue;
      if (Deno.readTextFileSync(argsFile).includes(dir)) return Number(entry.name);
    } catch { /* gone, or not ours to read */ }
  }
  throw new Error(`no process of rank ${rank}`);
}

/** Two epochs with a checkpoint after each (generations 1 and 2), momentum 0: files of 814 KB. */
async function twoGenerations(dir: string, procs = 2): Promise<string[]> {
  const flags = [...QUICK, "--momentum", "0", "--checkpoint", dir, "--procs", String(procs)];
  await runTraining(await plan([...flags, "--epochs", "2"]), { metadata: METADATA, print: false });
  assertEquals([meta(dir)!.generation, meta(dir)!.epoch], [2, 2]);
  return [...flags, "--epochs", "3"];
}

Deno.test("checkpoint: a damaged rank file is refused, naming it, and the set before it is offered", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const flags = await twoGenerations(dir);
    // 64 bytes flipped in the middle of rank 1's parameters.
    const file = `${dir}/rank-1.g2.bin`;
    const bytes = await Deno.readFile(file);
    for (let i = 0; i < 64; i++) bytes[4096 + i] ^= 0xff;
    await Deno.writeFile(file, bytes);
    await assertRejects(() => plan([...flags, "--resume"]), {
      name: "UsageError",
      message: new RegExp(
        `^--resume: ${dir}/rank-1\\.g2\\.bin does not match its SHA-256 recorded in ` +
          `${dir}/checkpoint\\.json; the checkpoint before it \\(epoch 2, step 0\\) is whole: ` +
          `--resume-previous goes on from it$`,
      ),
    });
    // The set before it is whole: the run goes on from the end of epoch 1.
    const out = await runTraining(await plan([...flags, "--resume-previous"]), {
      metadata: METADATA,
      print: false,
    });
    assertEquals(out[0].summary!.epochs.map((r) => r.epoch), [1, 2, 3]);
    assertEquals([meta(dir)!.epoch, meta(dir)!.generation], [3, 3]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpoint: fields that a run could not have written are refused in one line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const flags = await twoGenerations(dir);
    const original = await Deno.readTextFile(`${dir}/checkpoint.json`);
    const cases: [(m: Record<string, unknown>) => void, RegExp][] = [
      [(m) => m.epoch = "2", /epoch "2" \(expected an integer ≥ 0\)/],
      [(m) => m.step = -1, /step -1 \(expected an integer ≥ 0\)/],
      [(m) => m.format = 1, /format 1 \(this version reads 2\)/],
      [(m) => (m.rows as unknown[]).pop(), /1 rows for epoch 2/],
      [(m) => (m.files as { bytes: number }[])[0].bytes = 7, /rank 0's file entry/],
    ];
    for (const [tamper, message] of cases) {
      const m = JSON.parse(original);
      tamper(m);
      await Deno.writeTextFile(`${dir}/checkpoint.json`, JSON.stringify(m));
      await assertRejects(() => plan([...flags, "--resume"]), { name: "UsageError", message });
    }
    // A position past the epoch's steps: refused before any rank starts, naming the file.
    const m = JSON.parse(original);
    m.step = 999999;
    await Deno.writeTextFile(`${dir}/checkpoint.json`, JSON.stringify(m));
    await assertRejects(() => plan([...flags, "--resume"]), {
      name: "UsageError",
      message: new RegExp(
        `^--resume: ${dir}/checkpoint\\.json is not a checkpoint this run can go on from: its ` +
          `step 999999 of epoch 3 is past the 30 steps of an epoch of this run$`,
      ),
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpoint: NaN parameters are refused even with a matching digest", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const flags = await twoGenerations(dir);
    const file = `${dir}/rank-0.g2.bin`;
    const bytes = await Deno.readFile(file);
    new Float32Array(bytes.buffer, 32, 16).fill(NaN); // past the score and the epoch's ms
    await Deno.writeFile(file, bytes);
    const m = JSON.parse(await Deno.readTextFile(`${dir}/checkpoint.json`));
    m.files[0].sha256 = Array.from(
      new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    await Deno.writeTextFile(`${dir}/checkpoint.json`, JSON.stringify(m));
    await assertRejects(
      async () => runTraining(await plan([...flags, "--resume"]), { metadata: METADATA }),
      { message: /rank-0\.g2\.bin holds NaN or infinite values/ },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** SHA-256 of `bytes` in hex, as checkpoint.json records it. */
async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

// Whether the replicas must agree follows from the run's settings, never from a field an editor
// can flip; the refusal names the file that differs from the majority.
const CHANGED_REPLICAS: { procs: number; changed: number; flip?: boolean; named: string }[] = [
  {
    procs: 2,
    changed: 1,
    flip: true,
    named: "rank-0.g2.bin, rank-1.g2.bin hold parameters that differ, with no majority",
  },
  {
    procs: 3,
    changed: 0,
    named: "rank-0.g2.bin holds other parameters than rank-1.g2.bin, rank-2.g2.bin",
  },
];
for (const { procs, changed, flip, named } of CHANGED_REPLICAS) {
  Deno.test(`checkpoint: replicas changed consistently with their digests are refused at resume, one line, exit 2: ${procs} ranks, rank ${changed} changed${flip ? ', "replicated": false written in' : ""}`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      const flags = await twoGenerations(dir, procs);
      // One rank's first parameter nudged, and its digest in checkpoint.json made to match.
      const file = `${dir}/rank-${changed}.g2.bin`;
      const bytes = await Deno.readFile(file);
      new Float32Array(bytes.buffer, 32, 1)[0] += 0.25;
      await Deno.writeFile(file, bytes);
      const m = JSON.parse(await Deno.readTextFile(`${dir}/checkpoint.json`));
      m.files[changed].sha256 = await sha256(bytes);
      if (flip) m.replicated = false;
      await Deno.writeTextFile(`${dir}/checkpoint.json`, JSON.stringify(m));
      const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "scripts/train.ts", ...flags, "--data", MNIST_DIR, "--resume"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const lines = decode(stderr).trim().split("\n").filter((l) => l.startsWith("dccl train:"));
      assertEquals(code, 2, decode(stderr));
      assertEquals(lines, [
        `dccl train: ${dir}/checkpoint.json was written where every rank held the same ` +
        `parameters, but ${named}: the files were changed after they were written; refusing ` +
        `to resume from diverged replicas`,
      ]);
      assert_(!decode(stdout).includes("epoch 3"), "no epoch was trained");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("checkpoint: a new run never replaces another's checkpoint unless told to", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const flags = await twoGenerations(dir);
    await assertRejects(() => plan(flags), {
      name: "UsageError",
      message: new RegExp(
        `^--checkpoint ${dir} holds another run's checkpoint \\(checkpoint\\.json\\): --resume ` +
          `goes on from it; --overwrite-checkpoint starts afresh and replaces it$`,
      ),
    });
    await assertRejects(() => plan([...flags, "--resume", "--overwrite-checkpoint"]), {
      name: "UsageError",
      message: /--resume and --overwrite-checkpoint are not accepted together/,
    });
    const fresh = [...QUICK, "--momentum", "0", "--checkpoint", dir, "--epochs", "1"];
    await runTraining(await plan([...fresh, "--overwrite-checkpoint"]), { metadata: METADATA });
    // Only the new run's set: generation 1, no set before it.
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name).sort(), [
      "checkpoint.json",
      "rank-0.g1.bin",
      "rank-1.g1.bin",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
