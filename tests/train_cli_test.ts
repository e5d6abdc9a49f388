// `deno task train` as users meet it: bad flags are one line and exit 2 (before any rank
// starts), a run writes one CSV row per epoch with its JSON sidecar, and a rank dying in the
// middle of training fails the run fast, naming it, with no worker or process left behind.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { MNIST, MNIST_DIR } from "./_train.ts";
import { NO_GPU } from "./_gpu.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";
import { parseFlags, UsageError } from "../scripts/common/flags.ts";
import { planTraining, startTraining, TRAIN_FLAGS } from "../scripts/train/training.ts";
import { liveProcesses } from "../deno/launch/processes.ts";
import { EPOCH_COLUMNS } from "../trainer/epochs.ts";
import { parse } from "csv-parse/sync";
import { expectedLine } from "./_expected.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

function plan(argv: string[]) {
  return planTraining(parseFlags(TRAIN_FLAGS, argv), MNIST);
}

Deno.test("train: every bad flag value is refused with what is accepted", async () => {
  const cases: [string[], RegExp][] = [
    [["--sync", "gossip"], /--sync gossip is not accepted; accepted: allreduce, local-sgd, ps/],
    [["--procs", "0"], /--procs 0 is not accepted: expected an integer from 1 to 4096/],
    [["--sync", "ps", "--procs", "1"], /rank 0 serves, so it needs at least 2/],
    [["--ps-mode", "async"], /--ps-mode async is not accepted: it applies to --sync ps/],
    [["--sync-every", "0"], /--sync-every 0 is not accepted/],
    [["--sync-every", "sometimes"], /--sync-every sometimes is not accepted/],
    [["--layers", "784,10,3"], /widths from the images' pixels \(784 for MNIST\) to 10/],
    [["--layers", "784,x,10"], /--layers x is not accepted/],
    [["--act", "tanh"], /--act tanh is not accepted; accepted: relu, sigmoid/],
    [["--lr=-1"], /--lr -1 is not accepted: expected a number above 0/],
    [["--lr", "0"], /--lr 0 is not accepted/],
    [["--momentum", "1"], /--momentum 1 is not accepted: expected a number from 0 to/],
    [["--batch", "60001"], /--batch 60001 is not accepted: expected an integer from 1 to 30000/],
    [["--train-samples", "0"], /--train-samples 0 is not accepted/],
    [["--device", "tpu"], /--device tpu is not accepted; accepted: cpu, gpu/],
    [["--memory", "gpu", "--transport", "gpu", "--memory", "shared"], /--memory shared/],
    [
      ["--bind", "0.0.0.0"],
      /--bind 0.0.0.0 is not accepted: it applies to ranks that are processes/,
    ],
    [["--csv", "/nonexistent/x.csv"], /folder \/nonexistent does not exist/],
    [["--epochs", "1.5"], /--epochs 1.5 is not accepted/],
    [["--grad-dtype", "f8"], /--grad-dtype f8 is not accepted; accepted: f32, f16, bf16/],
    [["--grad-dtype", "f16", "--sync", "ps", "--procs", "2"], /it compresses the gradients of/],
    [
      ["--grad-dtype", "bf16", "--memory", "managed"],
      /--memory managed: the gradients are rounded on the host/,
    ],
    [["--error-feedback"], /--error-feedback is not accepted with --grad-dtype f32/],
    [
      ["--reproducible", "--sync", "local-sgd", "--procs", "2"],
      /--reproducible is not accepted with --sync local-sgd: it sums gradients/,
    ],
    [["--reproducible", "--sync-every", "4"], /--sync-every 4: it sums each batch's rows/],
    [["--reproducible", "--grad-dtype", "bf16"], /--grad-dtype bf16: its sums are rounded once/],
    [["--reproducible", "--memory", "managed"], /--memory managed: its sums are made on the host/],
  ];
  for (const [argv, message] of cases) {
    await assertRejects(() => plan(argv), { name: "UsageError", message });
  }
  const e = await assertRejects(() => planTraining(parseFlags(TRAIN_FLAGS, ["--data", "/tmp"])), {
    name: "UsageError",
    message: /--data \/tmp: \/tmp has neither train-images-idx3-ubyte nor/,
  });
  assert_(e instanceof UsageError && !e.message.includes("\n"));
});

/** Writes MNIST-style IDX files into a fresh folder: `count` images of `side`×`side` pixels. */
async function idxFolder(count: number, side: number): Promise<string> {
  const dir = await Deno.makeTempDir();
  const idx = (dims: number[]) => {
    const head = new DataView(new ArrayBuffer(4 + 4 * dims.length));
    head.setUint8(2, 0x08);
    head.setUint8(3, dims.length);
    dims.forEach((d, i) => head.setUint32(4 + 4 * i, d));
    const body = new Uint8Array(dims.reduce((a, b) => a * b, 1)).map((_, i) => i % 10);
    return new Uint8Array([...new Uint8Array(head.buffer), ...body]);
  };
  for (const split of ["train", "t10k"]) {
    await Deno.writeFile(`${dir}/${split}-images-idx3-ubyte`, idx([count, side, side]));
    await Deno.writeFile(`${dir}/${split}-labels-idx1-ubyte`, idx([count]));
  }
  return dir;
}

Deno.test("train: data that cannot train the model is refused in one line", async () => {
  const small = await idxFolder(200, 10), empty = await idxFolder(0, 28);
  const odd = await idxFolder(200, 10);
  Deno.removeSync(`${odd}/train-images-idx3-ubyte`);
  Deno.mkdirSync(`${odd}/train-images-idx3-ubyte`);
  Deno.removeSync(`${odd}/t10k-images-idx3-ubyte`);
  await new Deno.Command("mkfifo", { args: [`${odd}/t10k-images-idx3-ubyte`] }).output();
  try {
    const cases: [string[], RegExp][] = [
      // Images of another size than the first layer's width.
      [
        ["--data", small],
        /^--layers 784,256,10 is not accepted with --data .*: its images have 100 pixels, so the first width must be 100$/,
      ],
      // A file, not a folder.
      [["--data", "README.md"], /^--data \S*README.md: it is a file; expected a folder of MNIST.s/],
      // The real minimum: a global batch of 64.
      [
        ["--train-samples", "10"],
        /^--train-samples 10 is not accepted: a global batch of 64 \(batch 32 on each of 2 computing ranks\) needs at least 64 training images$/,
      ],
      // A folder of no images.
      [["--data", empty], /^--data .*: its training set has no images$/],
      // A folder, and a FIFO, where an IDX file belongs.
      [
        ["--data", odd],
        /^--data .*: \S*train-images-idx3-ubyte is not a file \(MNIST's IDX files are plain files\)$/,
      ],
    ];
    for (const [argv, message] of cases) {
      const read = argv.includes("--data") ? undefined : MNIST;
      await assertRejects(() => planTraining(parseFlags(TRAIN_FLAGS, argv), read), {
        name: "UsageError",
        message,
      });
    }
    // Images that match the layers train.
    const p = await planTraining(
      parseFlags(TRAIN_FLAGS, ["--data", small, "--layers", "100,16,10"]),
    );
    assertEquals(p.mnist.train.pixels, 100);
  } finally {
    await Deno.remove(small, { recursive: true });
    await Deno.remove(empty, { recursive: true });
    await Deno.remove(odd, { recursive: true });
  }
  // Both tasks exit 2 with one line, not a stack trace.
  for (const script of ["train.ts", "train_study.ts"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `scripts/${script}`, ...(script === "train.ts" ? [] : ["batch"])]
        .concat(["--data", "README.md"]),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = decode(out.stderr);
    assertEquals(out.code, 2, stderr);
    assertEquals(stderr.trim().split("\n").length, 1, stderr);
    assert_(/--data \S*README.md: it is a file/.test(stderr), stderr);
  }
});

Deno.test("train: the CLI exits 2 with one line for a bad flag, and never starts ranks", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/train.ts", "--sync", "gossip", "--data", MNIST_DIR],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 2);
  const lines = decode(out.stderr).trim().split("\n");
  assertEquals(lines.length, 1, decode(out.stderr));
  assert_(lines[0].startsWith("dccl train: --sync gossip is not accepted"));
  assertEquals(decode(out.stdout), "");
});

Deno.test("train: a run prints its epochs and writes one CSV row per epoch and a JSON sidecar", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "scripts/train.ts",
        ...["--data", MNIST_DIR, "--epochs", "2", "--train-samples", "2048"],
        ...["--test-samples", "500", "--csv", `${dir}/run.csv`],
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(out.code, 0, decode(out.stderr));
    const stdout = decode(out.stdout);
    assert_(
      /^# dccl train: MNIST 784-256-10 \(relu\) on cpu, allreduce every batch, 2 ranks/.test(
        stdout,
      ),
    );
    assert_(/^ +2 +\d\.\d{4} +\d+\.\d\d% +\d+\.\d\d%/m.test(stdout), stdout);
    assert_(/# trained 2 epochs in .* test accuracy/.test(stdout));
    const rows: Record<string, string>[] = parse(await Deno.readTextFile(`${dir}/run.csv`), {
      columns: true,
    });
    assertEquals(rows.length, 2);
    assertEquals(Object.keys(rows[0]), EPOCH_COLUMNS);
    assertEquals(rows.map((r) => r.epoch), ["1", "2"]);
    for (const r of rows) {
      for (const c of ["time_s", "compute_s", "comm_s", "loss", "train_acc", "test_acc"]) {
        assert_(Number(r[c]) > 0, `${c} = ${r[c]}`);
      }
      assert_(Number(r.test_acc) <= 1 && r.staleness_mean === "");
    }
    const json = JSON.parse(await Deno.readTextFile(`${dir}/run.json`));
    assertEquals(json.rows.length, 2);
    assertEquals(json.summary.epochs.length, 2);
    assertEquals(json.metadata.options.sync, "allreduce");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

for (const transport of ["shm", "worker", "ws"] as const) {
  Deno.test(`train: a rank dying mid-training fails the run fast, naming it: ${transport}`, async () => {
    const p = await plan(["--transport", transport, "--procs", "3", "--epochs", "20"]);
    const metadata = JSON.parse(JSON.stringify({ options: {} }));
    const group = startTraining(p, { metadata, print: false, onLine: expectedLine });
    await new Promise((r) => setTimeout(r, transport === "ws" ? 2500 : 1500));
    const killedAt = performance.now();
    group.kill(1);
    await assertRejects(() => group.results, {
      name: "RankFailedError",
      message: /^Rank 1 failed/,
    });
    assert_(performance.now() - killedAt < 5000, "well within the 30 s timeout");
    assertEquals([liveWorkers(), liveProcesses()], [0, 0]);
  });
}

Deno.test("train-study: a study writes its CSV, JSON, SVG and HTML and prints its table", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const run = (...argv: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "scripts/train_study.ts", ...argv],
        stdout: "piped",
        stderr: "piped",
      }).output();
    const bad = await run("speed", "--out", dir);
    assertEquals(bad.code, 2);
    assertEquals(
      decode(bad.stderr).trim(),
      "dccl train-study: --study speed is not accepted; accepted: speedup, sync-every, batch, " +
        "strategies, memory, matmul",
    );
    const out = await run(
      "memory",
      ...["--epochs", "1", "--train-samples", "1024", "--test-samples", "200"],
      ...["--data", MNIST_DIR, "--out", dir, "--gpu", "no"],
    );
    assertEquals(out.code, 0, decode(out.stderr));
    assert_(/^ *memory +time_s +comm_s +relative_speed +test_acc_pct$/m.test(decode(out.stdout)));
    const rows: Record<string, string>[] = parse(await Deno.readTextFile(`${dir}/memory.csv`), {
      columns: true,
    });
    assertEquals(
      rows.map((r) => r.memory),
      NO_GPU ? ["shared", "host"] : ["shared", "host", "managed"],
    );
    // The slabs' memory kind changes the time, never the result.
    assertEquals(new Set(rows.map((r) => r.test_acc_pct)).size, 1);
    assert_((await Deno.readTextFile(`${dir}/memory.svg`)).startsWith("<svg"));
    assert_((await Deno.readTextFile(`${dir}/memory.html`)).includes("<table>"));
    assertEquals(
      JSON.parse(await Deno.readTextFile(`${dir}/memory.json`)).rows.length,
      rows.length,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("train-study sync-every: allreduce calls fall with K, a 1-rank baseline, repeats, and the runs take --lr and --batch", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", "scripts/train_study.ts", "sync-every", "--epochs", "1"],
        ...["--train-samples", "1024", "--test-samples", "200", "--batch", "16", "--lr", "0.5"],
        ...["--data", MNIST_DIR, "--out", dir, "--gpu", "no", "--repeat", "2"],
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(out.code, 0, decode(out.stderr));
    // Every point ran twice: 16 points, 32 runs.
    assertEquals(decode(out.stderr).match(/^\[\d+\] sync-every/gm)?.length, 32);
    assert_(/# 1 rank \(no averaging\): test accuracy \d+\.\d+%/.test(decode(out.stdout)));
    const rows: Record<string, string>[] = parse(
      await Deno.readTextFile(`${dir}/sync-every.csv`),
      { columns: true },
    );
    for (const procs of ["2", "4", "8"]) {
      const calls = rows.filter((r) => r.procs === procs).map((r) => Number(r.allreduce_calls));
      // K = 1 averages after every one of the epoch's 1024 / (16 × procs) steps; then fewer.
      assertEquals(calls[0], 1024 / (16 * Number(procs)));
      assert_(calls.every((c, i) => i === 0 || c <= calls[i - 1]), `${procs} ranks: ${calls}`);
      assertEquals(calls.at(-1), 1);
    }
    const doc = JSON.parse(await Deno.readTextFile(`${dir}/sync-every.json`));
    assertEquals([doc.metadata.options.lr, doc.metadata.options.batch], ["0.5", "16"]);
    assert_(rows.every((r) => r.runs === "2" && Number(r.time_spread_pct) >= 0));
    assert_(rows.every((r) => r.noisy === (Number(r.time_spread_pct) > 10 ? "yes" : "")));
    for (const load of [doc.metadata.options.load_before, doc.metadata.options.load_after]) {
      assertEquals(load.length, 3);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Runs `deno run -A <args>` as the leader of a process group of its own, as a terminal runs a
 * command, and sends the whole group SIGINT (Ctrl-C) once its output (`on`) matches `when`.
 */
async function interrupted(args: string[], on: "stdout" | "stderr", when: RegExp) {
  const child = new Deno.Command("setsid", {
    args: [Deno.execPath(), "run", "-A", ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const text = { stdout: "", stderr: "" };
  await Promise.all((["stdout", "stderr"] as const).map(async (stream) => {
    for await (const chunk of child[stream].pipeThrough(new TextDecoderStream())) {
      const before = text[stream];
      text[stream] += chunk;
      if (stream === on && !when.test(before) && when.test(text[stream])) {
        Deno.kill(-child.pid, "SIGINT");
      }
    }
  }));
  return { code: (await child.status).code, ...text };
}

Deno.test("train-study: Ctrl-C keeps the finished runs and exits 130", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = await interrupted(
      [
        "scripts/train_study.ts",
        "memory",
        ...["--epochs", "3", "--train-samples", "4096", "--test-samples", "200"],
        ...["--data", MNIST_DIR, "--out", dir, "--gpu", "no"],
      ],
      "stderr",
      /^\[1\] memory/m,
    );
    assertEquals(out.code, 130, out.stderr);
    assert_(
      /interrupted by SIGINT; .*memory\.csv and \.json hold the 1 finished runs/.test(out.stderr),
      out.stderr,
    );
    const rows: Record<string, string>[] = parse(await Deno.readTextFile(`${dir}/memory.csv`), {
      columns: true,
    });
    assertEquals(rows.map((r) => r.memory), ["shared"]);
    assertEquals(JSON.parse(await Deno.readTextFile(`${dir}/memory.json`)).rows.length, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("train: Ctrl-C to the whole process group exits 130, whoever fails first", async () => {
  // Process ranks get the same SIGINT as the task and die: the run was still interrupted.
  const out = await interrupted(
    [
      "scripts/train.ts",
      ...["--transport", "ws", "--epochs", "50", "--train-samples", "4096"],
      ...["--data", MNIST_DIR],
    ],
    "stdout",
    /^ +1 /m,
  );
  assertEquals(out.code, 130, out.stderr);
  assert_(/^dccl train: interrupted by SIGINT/m.test(out.stderr), out.stderr);
});
