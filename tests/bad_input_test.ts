// Bad input that once got a wrong word: a default the task then refused (--max with wide dtypes),
// a flag the user never gave named in the refusal (browser --threads), a missing tool as a
// failure instead of bad input (exit 2), and a dangling link as an output folder (a raw mkdir
// error). Each is one line naming what was wrong, exit 2, nothing written.
import { assert_, assertEquals } from "./_assert.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import { parseFlags, usage } from "../scripts/common/flags.ts";
import { TRAIN_FLAGS } from "../scripts/train/training_flags.ts";

/** Runs `script` with `args` (and `env`, if given); resolves with its exit code and stderr. */
async function task(script: string, args: string[], env?: Record<string, string>) {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `scripts/${script}.ts`, ...args],
    env,
    stdout: "null",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(stderr).trim().split("\n");
  return { code, lines };
}

Deno.test("bad input: a wide dtype's default --max is its 1 GiB, with a note", () => {
  for (const primitive of ["allreduce", "allgather"] as const) {
    for (const [dtype, max] of [["f64", 2 ** 27], ["f32", 2 ** 28], ["f16", 2 ** 28]] as const) {
      const argv = ["--dtype", dtype];
      const p = planRun(primitive, parseFlags(BENCHMARK_FLAGS, argv), { availableBytes: 1e12 });
      assertEquals(p.sweep.counts.at(-1), max, `${primitive} ${dtype}`);
      const lowered = p.notes.filter((n) => n.startsWith("--max lowered"));
      assertEquals(
        lowered,
        dtype === "f64"
          ? ["--max lowered to 134217728 elements: the largest f64 buffer is 1 GiB"]
          : [],
      );
    }
  }
});

Deno.test("bad input: a group with tabs refuses what tabs cannot join, naming the flag", () => {
  const plan = (argv: string[]) => planRun("allreduce", parseFlags(BENCHMARK_FLAGS, argv));
  for (
    const [argv, line] of [
      [["--tabs", "2", "--transport", "tcp"], "--transport tcp is not accepted with --tabs 2"],
      [["--tabs", "1", "--bind", "0.0.0.0"], "--bind 0.0.0.0 is not accepted with --tabs 1"],
      [["--tabs", "1", "--launcher", "env"], "--launcher env is not accepted with --tabs 1"],
      [["--host", "0.0.0.0"], "--host 0.0.0.0 is not accepted without --tabs"],
    ] as const
  ) {
    let message = "";
    try {
      plan([...argv]);
    } catch (e) {
      message = (e as Error).message;
    }
    assert_(message.startsWith(line), `${argv.join(" ")}: ${message}`);
    assertEquals(message.split("\n").length, 1);
  }
  const ok = plan(["--tabs", "2", "--procs", "1"]);
  // A window of receives is one buffer: --max too large for it is refused at once, not by a rank.
  let windowed = "";
  try {
    planRun("bw", parseFlags(BENCHMARK_FLAGS, ["--max", "16M"]));
  } catch (e) {
    windowed = (e as Error).message;
  }
  assert_(windowed.startsWith("--max 16M is not accepted with a window of 64"), windowed);
  assertEquals([ok.transport, ok.procs, ok.processes, ok.tabs], ["websocket", 3, 1, 2]);
});

Deno.test("bad input: --progress thread is refused where no progress thread can run, naming the flag", async () => {
  const thread = ["--progress", "thread", "--procs", "2"];
  for (
    const [argv, line] of [
      [["--transport", "worker"], "--progress thread is not accepted with --transport worker"],
      [
        ["--transport", "tcp", "--threads", "2"],
        "--progress thread is not accepted with --threads 2",
      ],
      [
        ["--transport", "tcp", "--memory", "gpu"],
        "--progress thread is not accepted with --memory gpu",
      ],
      [
        ["--transport", "ws", "--progress", "bogus"],
        "--progress bogus is not accepted; accepted: inline, thread",
      ],
    ] as const
  ) {
    let message = "";
    try {
      planRun("allreduce", parseFlags(BENCHMARK_FLAGS, [...thread, ...argv]));
    } catch (e) {
      message = (e as Error).message;
    }
    assert_(message.startsWith(line), `${argv.join(" ")}: ${message}`);
    assertEquals(message.split("\n").length, 1);
  }
  const ok = planRun("allreduce", parseFlags(BENCHMARK_FLAGS, [...thread, "--transport", "tcp"]));
  assertEquals([ok.progress, ok.transport], ["thread", "tcp"]);
  const { code, lines } = await task("train", [...thread, "--transport", "tcp", "--device", "gpu"]);
  assertEquals([code, lines], [2, [
    "dccl train: --progress thread is not accepted with --device gpu (its slabs default to gpu " +
    "memory): a progress thread carries host memory (host, shared)",
  ]]);
});

Deno.test("bad input: the browser task names the flag the user gave, and a missing Chromium is exit 2", async () => {
  for (
    const [flags, line] of [
      [["--threads", "2"], "--threads 2 is not accepted in a browser tab"],
      [["--launcher", "env"], "--launcher env is not accepted in a browser tab"],
      [["--progress", "thread"], "--progress thread is not accepted in a browser tab"],
    ] as const
  ) {
    const { code, lines } = await task("browser", ["allreduce", ...flags]);
    assertEquals(code, 2, lines.join("\n"));
    assertEquals(lines.length, 1, lines.join("\n"));
    assert_(
      lines[0].startsWith(`dccl browser allreduce: ${line}: its ranks are the tab's own workers`),
      lines[0],
    );
  }
  const nowhere = await Deno.makeTempDir(); // a PATH on which no chromium is found
  try {
    for (const what of ["allreduce", "train"]) {
      const { code, lines } = await task("browser", [what], { PATH: nowhere });
      assertEquals([code, lines], [2, [
        `dccl browser ${what}: Chromium is not installed: install Debian's package chromium ` +
        `(apt-get install -y chromium)`,
      ]]);
    }
  } finally {
    await Deno.remove(nowhere);
  }
});

Deno.test("bad input: a dangling link where an output folder goes is one line naming it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const link = `${dir}/out`;
    Deno.symlinkSync(`${dir}/gone`, link);
    const target = `${dir}/gone`;
    for (
      const [script, args, line] of [
        ["sweep", ["--out", link], `--out ${link} is not accepted: it is a link to ${target}`],
        [
          "train_study",
          ["batch", "--out", link],
          `--out ${link} is not accepted: it is a link to ${target}`,
        ],
        [
          "compare",
          ["tests/fixtures/allreduce_shm.csv", "--out", `${link}/r.html`],
          `--out ${link}/r.html is not accepted: ${link} is a link to ${target}`,
        ],
        [
          "allreduce",
          ["--csv", `${link}/a.csv`],
          `--csv ${link}/a.csv is not accepted: folder ${link} is a link to ${target}`,
        ],
        [
          "train",
          ["--checkpoint", link],
          `--checkpoint ${link} is not accepted: it is a link to ${target}`,
        ],
      ] as const
    ) {
      const { code, lines } = await task(script, [...args]);
      assertEquals(code, 2, lines.join("\n"));
      assertEquals(lines.length, 1, lines.join("\n"));
      assert_(lines[0].endsWith(`${line}, which does not exist`), lines[0]);
    }
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["out"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bad input: -h prints the usage; an unknown flag gets the nearest known one", async () => {
  const help = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/allreduce.ts", "-h"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(help.code, 0, new TextDecoder().decode(help.stderr));
  assert_(new TextDecoder().decode(help.stdout).includes("--procs"), "the usage lists --procs");
  for (
    const [flag, line] of [
      ["--proc", "unknown flag --proc: did you mean --procs? (-h lists every flag)"],
      [
        "--trasnport=tcp",
        "unknown flag --trasnport: did you mean --transport? (-h lists every flag)",
      ],
    ]
  ) {
    const { code, lines } = await task("allreduce", [flag, "4"]);
    assertEquals([code, lines], [2, [`dccl allreduce: ${line}`]]);
  }
  const { code, lines } = await task("allreduce", ["--zzzzzz"]);
  assertEquals(code, 2);
  assert_(
    /^dccl allreduce: unknown flag --zzzzzz; accepted: --procs, .* \(-h explains each\)$/.test(
      lines[0],
    ),
    lines[0],
  );
});

Deno.test("bad input: a library user without a permission gets one line naming the flags to add", async () => {
  const program = await Deno.makeTempFile({ suffix: ".ts" });
  const lib = new URL("../mod.ts", import.meta.url).href;
  const rank = new URL("./ranks/sum_rank.ts", import.meta.url).href;
  await Deno.writeTextFile(
    program,
    `import { spawnRanks } from ${JSON.stringify(lib)};
     try { await spawnRanks(${JSON.stringify(rank)}, { size: 2, transport: "tcp" }); }
     catch (e) { console.error(String(e)); Deno.exit(3); }`,
  );
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      // --quiet: Deno's own download lines (a fresh cache) are not the library's output.
      args: ["run", "--quiet", "--allow-read", program],
      stdout: "null",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
    assertEquals(out.code, 3, lines.join("\n"));
    assertEquals(lines, [
      "PermissionError: ranks over tcp need --allow-run --allow-write --allow-net --allow-env " +
      "(ranks are Deno processes; the ranks' arguments go through a temporary file; ranks listen " +
      "and connect; ranks find each other through their environment): run again with them, or -A",
    ]);
  } finally {
    await Deno.remove(program);
  }
});

Deno.test("bad input: every flag of the usage stands apart from its help, however long its name", () => {
  for (const [name, flags] of [["allreduce", BENCHMARK_FLAGS], ["train", TRAIN_FLAGS]] as const) {
    const lines = usage(name, "", flags).split("\n").filter((l) => l.startsWith("  "));
    const joined = lines.filter((l) => !/^ {2}(-\w, )*--[\w-]+( X)? {2,}\S/.test(l));
    assertEquals(joined, [], `deno task ${name} -h`);
  }
});
