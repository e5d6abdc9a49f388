// The files dccl writes (deno/files/atomic_file.ts): a link another user planted under a name the
// user did not give is never written through (the benchmark's and the trainer's CSV/JSON, the
// checkpoints, compare's chart), and a disk that fills up is named as such, exit 1, leaving no
// file behind (a small tmpfs, where one can be mounted).
import { assert_, assertEquals } from "./_assert.ts";
import { NO_TMPFS, withTmpfs } from "./_tmpfs.ts";
import { MNIST_DIR } from "./_train.ts";
import { OutputError, writeAtomically } from "../deno/files/atomic_file.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const QUICK_TRAIN = [
  ...["--procs", "2", "--epochs", "1", "--train-samples", "400", "--test-samples", "100"],
  ...["--batch", "20", "--momentum", "0", "--data", MNIST_DIR],
];
const QUICK_BENCH = ["--procs", "2", "--max", "1K", "--iters", "3", "--warmup", "1"];

/** Runs `deno run -A scripts/<script> …args`; its exit code and stderr. */
async function task(script: string, args: string[]): Promise<{ code: number; stderr: string }> {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `scripts/${script}`, ...args],
    stdout: "null",
    stderr: "piped",
  }).output();
  return { code, stderr: decode(stderr) };
}

/**
 * A folder holding `victim` (a file outside the run's folder, its bytes known) and the run's
 * folder `out`, where `plant` places links to the victim (or to a file that does not exist yet,
 * `absent`) under names the user does not give.
 */
async function withPlantedLinks(
  body: (p: { out: string; plant: (name: string, dangling?: boolean) => void }) => Promise<void>,
) {
  const root = await Deno.makeTempDir();
  const victim = `${root}/victim.txt`, absent = `${root}/created-through-a-link`;
  await Deno.writeTextFile(victim, "precious\n");
  await Deno.mkdir(`${root}/out`);
  try {
    await body({
      out: `${root}/out`,
      plant: (name, dangling = false) => Deno.symlinkSync(dangling ? absent : victim, name),
    });
    assertEquals(await Deno.readTextFile(victim), "precious\n", "the victim was written through");
    assertEquals(await Deno.stat(absent).then(() => true, () => false), false, "created through");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("outputs: a benchmark's CSV and JSON are never written through a planted link", async () => {
  await withPlantedLinks(async ({ out, plant }) => {
    plant(`${out}/run.json.tmp`);
    plant(`${out}/run.csv.tmp`, true);
    const { code, stderr } = await task("allreduce.ts", [
      ...QUICK_BENCH,
      ...["--csv", `${out}/run.csv`, "--json", `${out}/run.json`],
    ]);
    assertEquals(code, 0, stderr);
    const doc = JSON.parse(await Deno.readTextFile(`${out}/run.json`));
    assertEquals([doc.complete, doc.rows.length], [true, 11]);
    assertEquals((await Deno.readTextFile(`${out}/run.csv`)).trim().split("\n").length, 12);
  });
});

Deno.test("outputs: the trainer's files and checkpoints are never written through a planted link", async () => {
  await withPlantedLinks(async ({ out, plant }) => {
    await Deno.mkdir(`${out}/ckpt`);
    for (const name of ["checkpoint.json.tmp", "rank-0.g1.bin.tmp", "rank-1.g1.bin.tmp"]) {
      plant(`${out}/ckpt/${name}`);
    }
    plant(`${out}/train.json.tmp`, true);
    const { code, stderr } = await task("train.ts", [
      ...QUICK_TRAIN,
      ...["--checkpoint", `${out}/ckpt`, "--csv", `${out}/train.csv`],
    ]);
    assertEquals(code, 0, stderr);
    assert_(Deno.lstatSync(`${out}/ckpt/checkpoint.json`).isFile);
    assertEquals(JSON.parse(await Deno.readTextFile(`${out}/train.json`)).complete, true);
  });
});

Deno.test("outputs: compare's chart beside the report is never written through a planted link", async () => {
  await withPlantedLinks(async ({ out, plant }) => {
    plant(`${out}/report.svg`);
    const { code, stderr } = await task("compare.ts", [
      "tests/fixtures/allreduce_shm.csv",
      ...["--out", `${out}/report.html`],
    ]);
    assertEquals(code, 0, stderr);
    assert_(Deno.lstatSync(`${out}/report.svg`).isFile, "the link was replaced by the chart");
  });
});

Deno.test({
  name: `outputs: a full disk is named as such, exit 1, and leaves no file behind${
    NO_TMPFS ? ` (ignored: ${NO_TMPFS})` : ""
  }`,
  ignore: NO_TMPFS !== "",
}, async (t) => {
  await t.step("an atomic write", () =>
    withTmpfs(8192, (dir) => {
      let thrown: unknown;
      try {
        writeAtomically(`${dir}/big.bin`, new Uint8Array(64 * 1024));
      } catch (e) {
        thrown = e;
      }
      assert_(thrown instanceof OutputError, String(thrown));
      assertEquals(
        (thrown as Error).message,
        `cannot write ${dir}/big.bin: no space left on device`,
      );
      assertEquals([...Deno.readDirSync(dir)], []);
    }));
  await t.step("a benchmark's CSV and JSON", () =>
    withTmpfs(16 * 1024, async (dir) => {
      const { code, stderr } = await task("allreduce.ts", [
        ...QUICK_BENCH,
        ...["--max", "1M", "--csv", `${dir}/run.csv`, "--json", `${dir}/run.json`],
      ]);
      assertEquals(code, 1, stderr);
      assert_(
        /^dccl allreduce: cannot write .*\/run\.json: no space left on device$/m.test(stderr),
        stderr,
      );
      assertEquals([...Deno.readDirSync(dir)], []);
    }));
  await t.step("a checkpoint: no temporary file, no half generation, no folder it made", () =>
    // One rank's file (814 KB: no momentum) fits, the second does not.
    withTmpfs(1200 * 1024, async (dir) => {
      const into = `${dir}/runs/first`;
      const { code, stderr } = await task("train.ts", [...QUICK_TRAIN, "--checkpoint", into]);
      assertEquals(code, 1, stderr);
      assert_(
        /^dccl train: cannot write .*\/rank-\d\.g1\.bin: no space left on device$/m.test(stderr),
        stderr,
      );
      assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), []);
    }));
});
