// Checkpoints (deno/trainer/checkpoint.ts) and elastic restarts (`--max-restarts`): a run killed in the
// middle of an epoch and resumed from its last checkpoint ends with the very parameters of a run
// never stopped, bit for bit; the CLI restarts a group whose rank died and finishes with the
// uninterrupted run's accuracy; bad checkpoint flags are one line.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { MNIST, MNIST_DIR } from "./_train.ts";
import { parseFlags } from "../scripts/_flags.ts";
import { planTraining, runTraining, startTraining, TRAIN_FLAGS } from "../scripts/_training.ts";
import type { CheckpointMeta } from "../deno/trainer/checkpoint.ts";

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

// bf16 gradients with error feedback: the residual each rank carries is checkpointed too.
const RUNS: [string, string[]][] = [
  ["allreduce", []],
  ["local-sgd", []],
  ["allreduce", ["--grad-dtype", "bf16", "--error-feedback"]],
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

      const resumed = await runTraining(await plan([...saving, "--resume"]), out);
      // Counted, not diffed: a diff of two 200k-element arrays takes minutes to print.
      for (const [r, { params }] of resumed.entries()) {
        const differ = params!.filter((v, i) => !Object.is(v, whole[r].params![i])).length;
        assertEquals(differ, 0, `rank ${r}: parameters that differ from the run never stopped`);
      }
      const [a, b] = [whole[0].summary!.epochs, resumed[0].summary!.epochs];
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
    await refused(["--checkpoint", dir, "--resume"], /--resume: .* holds no checkpoint/);
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
