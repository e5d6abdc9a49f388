// The primitive tasks' command line: every flag, every bad value → a one-line error and exit 2,
// sizes, memory refusal, and what the subprocess prints and writes.
import { parse } from "csv-parse/sync";
import { assert_, assertEquals, assertThrows } from "./_assert.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import type { Primitive } from "../bench/cases.ts";
import { translateHabits } from "../scripts/common/foreign_flags.ts";
import { halfKernels } from "../kernels/reduce.ts";
import { parseFlags, size, UsageError, userPath } from "../scripts/common/flags.ts";
import { NO_GPU } from "./_gpu.ts";
import { CSV_HEADER } from "../bench/report_format.ts";
import { reproducibleInput, wrongReducedIn } from "../bench/exact_inputs.ts";
import { HostBuffer } from "../core.ts";

const plan = (argv: string[], available = 64e9, task: Primitive = "allreduce") =>
  planRun(task, parseFlags(BENCHMARK_FLAGS, argv), { availableBytes: available });

Deno.test("cli: defaults follow docs/design.md", () => {
  const p = plan([]);
  assertEquals(p.procs, 2);
  assertEquals(p.sweep.transport, "shm");
  assertEquals(p.sweep.memory, "shared");
  assertEquals(p.sweep.algorithm, "auto");
  assertEquals([p.sweep.op, p.sweep.dtype, p.sweep.root], ["sum", "f32", 0]);
  assertEquals(p.sweep.counts[0], 1);
  assertEquals(p.sweep.counts.at(-1), 268435456);
  assertEquals(p.sweep.counts.length, 29);
  assertEquals([p.sweep.iters, p.sweep.warmup, p.sweep.timing], [
    undefined,
    undefined,
    "back-to-back",
  ]);
  assertEquals(plan(["--transport", "worker"]).sweep.memory, "host");
});

Deno.test("cli: every flag is honoured", () => {
  const p = plan([
    ...["--procs", "4", "--transport", "worker", "--memory", "shared", "--algorithm", "ring"],
    ...["--min", "1K", "--max", "2^12", "--iters", "100", "--warmup", "3", "--op", "max"],
    ...["--dtype", "f64", "--root", "3", "--timing", "per-iter", "--timeout", "5"],
    ...["--csv", "x.csv", "--json", "x.json"],
  ]);
  assertEquals(p.procs, 4);
  assertEquals(p.sweep, {
    primitive: "allreduce",
    transport: "worker",
    memory: "shared",
    algorithm: "ring",
    dtype: "f64",
    op: "max",
    root: 3,
    counts: [1024, 2048, 4096],
    iters: 100,
    warmup: 3,
    timing: "per-iter",
    inPlace: true,
  });
  assertEquals(plan(["--out-of-place-only"]).sweep.inPlace, false);
  // Under deno task, relative paths are the user's folder's (INIT_CWD); under deno test, as typed.
  assertEquals([p.timeoutMs, p.csv, p.json], [5000, userPath("x.csv"), userPath("x.json")]);
  // A CSV always gets its metadata sidecar.
  assertEquals(plan(["--csv", "tests/run.csv"]).json, userPath("tests/run.json"));
  assertEquals(plan(["--csv", "run.data"]).json, userPath("run.data.json"));
  assertEquals(plan(["--csv", "a.csv", "--json", "b.json"]).json, userPath("b.json"));
  assertEquals(plan([]).json, undefined);
});

Deno.test("cli: sizes", () => {
  assertEquals(size("max", "2^20", "f32"), 1048576);
  assertEquals(size("max", "1M", "f32"), 1048576);
  assertEquals(size("max", "4k", "f32"), 4096);
  assertEquals(size("max", "256M", "i32"), 268435456);
  assertEquals(size("max", "268435456", "f32"), 268435456);
  for (const bad of ["0", "-1", "1.5", "2^29", "512M", "x", "", "1T"]) {
    assertThrows(() => size("max", bad, "f32"), UsageError as ErrorConstructor, /--max/);
  }
  assertThrows(() => size("max", "2^28", "f64"), UsageError as ErrorConstructor, /134217728 f64/);
  // allgather and reduce-scatter sizes are multiples of the ranks; too-small ones are dropped.
  const ag = planRun(
    "allgather",
    parseFlags(BENCHMARK_FLAGS, ["--procs", "3", "--max", "16"]),
    { availableBytes: 1e10 },
  );
  assertEquals(ag.sweep.counts, [3, 6, 15]);
});

Deno.test("cli: sizes in bytes, a step factor, and nccl-tests' and OSU's short flags", () => {
  assertEquals(size("min", "8B", "f32"), 2);
  assertEquals(size("min", "4KB", "f64"), 512);
  assertEquals(size("max", "128MB", "f32"), 2 ** 25);
  for (const bad of ["6B", "2B", "0B", "B"]) {
    assertThrows(() => size("min", bad, "f32"), UsageError as ErrorConstructor, /whole f32/);
  }
  const short = (argv: string[]) => plan(translateHabits(argv), 64e9);
  // OSU: -m sizes in bytes, -x warm-up, -f full output in OSU's layout.
  const osu = short(["-m", "4:1024", "-x", "3", "-f"]);
  assertEquals([osu.sweep.counts[0], osu.sweep.counts.at(-1), osu.sweep.warmup], [1, 256, 3]);
  assertEquals([osu.format, osu.full], ["osu", true]);
  // nccl-tests: -b 8 -e 128M -f 2 -n 20 -w 5 (sizes in bytes).
  const p = short(["-b", "8", "-e", "128M", "-f", "4", "-n", "20", "-w5"]);
  assertEquals([p.sweep.counts[0], p.sweep.counts.at(-1), p.sweep.counts[1]], [2, 2 ** 25, 8]);
  assertEquals([p.sweep.iters, p.sweep.warmup], [20, 5]);
  // OSU: -i iterations; long flags keep elements.
  assertEquals(short(["-i", "7", "--min", "8", "--max", "8"]).sweep, {
    ...short(["--iters", "7", "--min", "8", "--max", "8"]).sweep,
  });
  assertEquals(short(["--min", "8", "--max", "8"]).sweep.counts, [8]);
  assertEquals(plan(["--min", "1", "--max", "1000", "--step-factor", "10"]).sweep.counts, [
    1,
    10,
    100,
    1000,
  ]);
  assertThrows(() => plan(["--step-factor", "1"]), UsageError as ErrorConstructor, /step-factor/);
  const needs = /-n \(--iters\) needs/;
  assertThrows(() => parseFlags(BENCHMARK_FLAGS, ["-n"]), UsageError as ErrorConstructor, needs);
  // After `--` nothing is rewritten (cluster run hands those to the task it starts).
  const after: string[] = [];
  parseFlags(BENCHMARK_FLAGS, ["--", "-n", "5"], after);
  assertEquals(after, ["-n", "5"]);
});

Deno.test("cli: bad input is a one-line UsageError naming the flag and what it accepts", () => {
  const cases: [string[], RegExp][] = [
    [["--bogus", "1"], /unknown flag --bogus; accepted: --procs, /],
    [["stray"], /unexpected argument stray/],
    [["--procs", "0"], /--procs 0 .* from 1 to 4096/],
    [
      ["--procs", "257"],
      /--procs 257 .* at most 256 ranks over shm \(a simulated group, --transport sim, takes 4096\)/,
    ],
    [["--procs", "two"], /--procs two/],
    [["--transport", "carrier-pigeon"], /--transport carrier-pigeon .*accepted: shm, worker/],
    [["--transport", "worker", "--algorithm", "shm_direct"], /accepted: auto, recursive_doubling/],
    [["--memory", "hbm"], /--memory hbm .*accepted: host, shared, gpu, managed/],
    [
      ["--transport", "gpu", "--memory", "shared"],
      /--memory shared .*accepted: host, gpu, managed/,
    ],
    [["--memory", "gpu", "--dtype", "f64"], /--dtype f64 is not accepted with gpu memory: .*WGSL/],
    [["--transport", "gpu", "--dtype", "f64"], /with transport gpu/],
    [["--touch", "host"], /--touch host is not accepted: it touches managed memory/],
    [["--memory", "managed", "--touch", "cpu"], /--touch cpu .*accepted: host, device/],
    [["--transport", "gpu", "--algorithm", "ring"], /accepted: auto, gpu_direct, gpu_ring/],
    [["--memory", "gpu", "--algorithm", "shm_direct"], /accepted: auto, staged, pipelined/],
    [["--op", "xor"], /accepted: sum, prod, max, min, avg/],
    [["--dtype", "f8"], /accepted: f32, f64, i32, f16, bf16/],
    [["--root", "2"], /--root 2 .* from 0 to 1/],
    [["--min", "8", "--max", "4"], /--max 4 is below --min 8/],
    [["--iters", "0"], /--iters 0/],
    [["--warmup=-1"], /--warmup -1/],
    [["--warmup", "-1"], /--warmup needs a value/],
    [["--timing", "sometimes"], /accepted: back-to-back, per-iter/],
    [["--timeout", "0"], /--timeout 0 .* from 0\.1 to 86400/],
    [["--timeout", "1e-9"], /--timeout 1e-9 .* from 0\.1 to 86400/],
    [["--bind", "999.1.1.1", "--transport", "ws"], /--bind 999\.1\.1\.1 .* IPv4 or IPv6/],
    [["--bind", "0.0.0.0"], /--bind 0\.0\.0\.0 .* applies to ranks that are processes \(ws, tcp\)/],
    [["--launcher", "env", "--transport", "worker"], /--launcher env runs over ws or tcp/],
    [["--csv", "/proc/x.csv"], /--csv \/proc\/x\.csv .* cannot create files in \/proc/],
    [["--csv", "/nonexistent-dir/x.csv"], /folder \/nonexistent-dir does not exist/],
    [["--csv", "a.csv", "--json", "a.csv"], /--csv and --json name the same file/],
    [["--csv", "tests"], /--csv \S*tests is not accepted: it is a folder; expected a file path/],
    [["--procs"], /--procs needs a value/],
    [["--reproducible", "--op", "max"], /--reproducible applies to --op sum and avg, not max/],
    [["--reproducible", "--dtype", "i32"], /not i32 \(its sums are exact already\)/],
  ];
  for (const [argv, message] of cases) {
    try {
      plan(argv);
      throw new Error(`${argv.join(" ")} was accepted`);
    } catch (e) {
      assert_(e instanceof UsageError, `${argv.join(" ")}: ${e}`);
      assert_(message.test(e.message), `${argv.join(" ")}: ${e.message}`);
      assert_(!e.message.includes("\n"), "one line");
    }
  }
  assertThrows(
    () =>
      planRun("sendrecv", parseFlags(BENCHMARK_FLAGS, ["--procs", "4"]), { availableBytes: 1e10 }),
    UsageError as ErrorConstructor,
    /sendrecv runs on 2 ranks/,
  );
  assertThrows(
    () =>
      planRun("bcast", parseFlags(BENCHMARK_FLAGS, ["--reproducible"]), { availableBytes: 1e10 }),
    UsageError as ErrorConstructor,
    /--reproducible applies to allreduce, reduce, reduce_scatter, reduce_scatterv, not bcast/,
  );
});

Deno.test("cli: --reproducible checks every result bit for bit against the reproducible sum", async () => {
  const dir = Deno.makeTempDirSync();
  for (
    const [primitive, dtype, op] of [["allreduce", "f32", "sum"], ["reduce_scatter", "bf16", "avg"]]
  ) {
    const r = await task([
      ...["--procs", "3", "--max", "4K", "--iters", "2", "--warmup", "1", "--reproducible"],
      ...["--dtype", dtype, "--op", op, "--json", `${dir}/a.json`],
    ], primitive);
    assertEquals(r.code, 0, r.stderr);
    assert_(r.stdout.includes(`op ${op} (reproducible)`), r.stdout);
    assert_(r.stdout.includes("#wrong = elements whose bits ≠ the reproducible sum"), r.stdout);
    const json = JSON.parse(Deno.readTextFileSync(`${dir}/a.json`));
    assertEquals(json.metadata.reproducible, true);
    for (const row of json.rows) assertEquals([row.wrong, row.inplace_wrong], [0, 0]);
  }
  // Two algorithms on two transports: compare --same-bits finds the same bits; a plain run is no
  // evidence of it.
  const runs = [["shm", "ring", "a"], ["tcp", "recursive_doubling", "b"], ["shm", "ring", "plain"]];
  for (const [transport, algorithm, name] of runs) {
    const r = await task([
      ...["--procs", "2", "--max", "1K", "--iters", "2", "--warmup", "1", "--transport", transport],
      ...["--algorithm", algorithm, "--csv", `${dir}/${name}.csv`],
      ...(name === "plain" ? [] : ["--reproducible"]),
    ]);
    assertEquals(r.code, 0, r.stderr);
  }
  const same = await task(
    [`${dir}/a.csv`, `${dir}/b.csv`, "--same-bits", "--out", `${dir}/r.html`],
    "compare",
  );
  assertEquals(same.code, 0, same.stderr);
  assert_(same.stdout.includes("same bits: 11 cells shared by 2 runs"), same.stdout);
  const refused = await task([`${dir}/a.csv`, `${dir}/plain.csv`, "--same-bits"], "compare");
  assertEquals(refused.code, 2);
  assert_(/plain\.json is not a --reproducible run/.test(refused.stderr), refused.stderr);
  // The inputs are such that sums in another order round otherwise: the check can tell.
  const size = 3, n = 1024, plain = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    for (let r = 0; r < size; r++) {
      plain[i] = Math.fround(plain[i] + reproducibleInput(r, i, "f32"));
    }
  }
  const wrong = await wrongReducedIn(
    new HostBuffer(plain),
    { op: "sum", reproducible: true },
    size,
  );
  assert_(wrong > 0, "the plain sums of the reproducible inputs all passed the check");
});

Deno.test("cli: sizes the machine cannot hold are refused, or the default lowered", () => {
  // 4 ranks × (send + recv) × 2^24 floats × 4 B = 537 MB, plus 4 rank runtimes and the rings,
  // > 90% of 400 MB.
  assertThrows(
    () => plan(["--procs", "4", "--max", "2^24"], 400e6),
    UsageError as ErrorConstructor,
    /--max 2\^24 does not fit: it needs 0\.6 GB for 4 ranks .*; 0\.4 GB available/,
  );
  // So many ranks that their runtimes alone do not fit.
  assertThrows(
    () => plan(["--procs", "256", "--transport", "ws"], 8e9),
    UsageError as ErrorConstructor,
    /--procs 256 does not fit: 256 ws ranks need 21\.5 GB before any buffer/,
  );
  const lowered = plan(["--procs", "4"], 400e6);
  assertEquals(lowered.sweep.counts.at(-1), 2 ** 23);
  assert_(/--max lowered to 8388608 elements/.test(lowered.notes[0]));
  // Host memory on a message transport also needs scratch as large as the buffer.
  assertThrows(
    () => plan(["--transport", "worker", "--max", "2^26"], 1e9),
    UsageError as ErrorConstructor,
    /does not fit/,
  );
  // The sweep is sized by the algorithm it runs: binomial reduce holds two scratch buffers
  // where the direct shared-memory reduce holds none.
  const reduce = (algorithm: string) =>
    plan(["--procs", "8", "--dtype", "i32", "--algorithm", algorithm], 12e9, "reduce");
  assertEquals(reduce("binomial").sweep.counts.at(-1), 2 ** 25);
  assertEquals(reduce("shm_direct").sweep.counts.at(-1), 2 ** 27);
});

// The folder is passed in: setting INIT_CWD here would move the relative paths of test files
// running in parallel in this process (the trainer tests' data folder).
Deno.test("cli: relative paths are taken from the folder deno task was started in", () => {
  assertEquals(userPath("a.csv", "/home/me/runs"), "/home/me/runs/a.csv");
  assertEquals(userPath("../b/a.csv", "/home/me/runs"), "/home/me/b/a.csv");
  assertEquals(userPath("/tmp/a.csv", "/home/me/runs"), "/tmp/a.csv");
  assertEquals(userPath("a.csv", ""), "a.csv"); // deno run: the working directory is the user's
});

async function task(args: string[], script = "allreduce") {
  const out = await new Deno.Command(Deno.execPath(), {
    // As deno.json's tasks run it, with V8's f16 flag.
    args: [
      "run",
      "-A",
      "--v8-flags=--experimental-wasm-fp16",
      new URL(`../scripts/${script}.ts`, import.meta.url).pathname,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("cli: a bad flag exits 2 with one line on stderr and writes nothing", async () => {
  const dir = Deno.makeTempDirSync();
  const r = await task(["--procs", "0", "--csv", `${dir}/a.csv`, "--json", `${dir}/a.json`]);
  assertEquals(r.code, 2);
  assertEquals(r.stdout, "");
  assertEquals(r.stderr.trim().split("\n").length, 1);
  assert_(r.stderr.startsWith("dccl allreduce: --procs 0"), r.stderr);
  assertEquals([...Deno.readDirSync(dir)].length, 0);
  // A good CSV path next to a bad JSON one: no header-only CSV is left behind.
  const both = await task(["--csv", `${dir}/ok.csv`, "--json", `${dir}/missing/x.json`]);
  assertEquals(both.code, 2);
  assert_(/--json .*missing\/x\.json is not accepted: folder .* does not exist/.test(both.stderr));
  assertEquals([...Deno.readDirSync(dir)].length, 0);
  const help = await task(["--help"]);
  assertEquals(help.code, 0);
  assert_(help.stdout.includes("--timing"));
});

Deno.test("cli: the table on stdout, CSV and JSON with the same rows", async () => {
  const dir = Deno.makeTempDirSync();
  const r = await task([
    ...["--procs", "3", "--max", "64", "--iters", "5", "--warmup", "1"],
    ...["--csv", `${dir}/a.csv`, "--json", `${dir}/a.json`],
  ]);
  assertEquals(r.code, 0, r.stderr);
  assertEquals(r.stderr, ""); // no progress bar when stderr is not a terminal
  const lines = r.stdout.trim().split("\n");
  assert_(lines[0].startsWith("# dccl allreduce: 3 ranks, transport shm"), lines[0]);
  const columns = lines.find((l) => /^#\s+size\s+count/.test(l))!.slice(1).trim().split(/\s+/);
  assertEquals(columns.slice(5, 9), ["time", "algbw", "busbw", "#wrong"]); // out of place
  assertEquals(columns.slice(9, 13), ["time", "algbw", "busbw", "#wrong"]); // in place
  assert_(!columns.includes("p50"), columns.join(" "));
  const table = lines.filter((l) => !l.startsWith("#"));
  assertEquals(table.length, 7); // 1 … 64 floats
  assertEquals(table.map((l) => Number(l.trim().split(/\s+/)[1])), [1, 2, 4, 8, 16, 32, 64]);
  // nccl-tests' footer, then the rows read against this machine's limits (or how to measure them).
  const end = lines.indexOf("# Out of bounds values : 0 OK");
  assert_(/^# Avg bus bandwidth {4}: \d+\.\d+$/.test(lines[end + 1]), lines[end + 1]);
  // Then a Spread line where a busy machine decided some sizes' times.
  const limits = lines.slice(end + 2).filter((l) => !l.startsWith("# Spread: "));
  assert_(limits.at(-1)!.startsWith("# Limits: "), limits.join("\n"));
  const csv = Deno.readTextFileSync(`${dir}/a.csv`).trim().split("\n");
  assertEquals(
    csv[0],
    "primitive,transport,memory,algorithm,procs,count,bytes,iters,time_us,min_us,max_us,gbps," +
      "algbw_gbs,busbw_gbs,wrong,timing,p50_us,p99_us,picked,migrations,migrated_bytes,touch_us," +
      "threads,type,redop,root,inplace_time_us,inplace_gbps,inplace_algbw_gbs,inplace_busbw_gbs," +
      "inplace_wrong,pct_limit,best_us,p90_us,p999_us,msg_rate,overall_us,compute_us,overlap_pct," +
      "busiest_bytes,imbalance,balanced_us,slowdown",
  );
  assertEquals(csv.length, 8);
  const json = JSON.parse(Deno.readTextFileSync(`${dir}/a.json`));
  assertEquals(json.rows.length, 7);
  assertEquals(json.metadata.deno, Deno.version.deno);
  assert_(typeof json.metadata.cpu === "string" && json.metadata.date.length > 0);
  // The half kernels the ranks ran, as they said (the task passes V8 the f16 flag they need).
  assertEquals(json.metadata.halfKernels, halfKernels());
  for (const [i, row] of json.rows.entries()) {
    const cells = csv[i + 1].split(",");
    assertEquals(cells.slice(0, 8), [
      "allreduce",
      "shm",
      "shared",
      "auto",
      "3",
      String(row.floats),
      String(row.floats * 4),
      "5",
    ]);
    assertEquals(cells.slice(23, 26), ["f32", "sum", "-1"]); // nccl-tests' type, redop and root
    assertEquals(cells[30], "0"); // in place (inplace_wrong), exact too
    assertEquals(row.wrong, 0);
    assertEquals(row.samples_us.length, 5); // back-to-back batches of one op each at 5 iters
    assert_(row.min_us <= row.time_us && row.time_us <= row.max_us);
    assert_(Math.abs(row.gbps - (row.bytes * 8) / row.time_us / 1e3) < 1e-9 * row.gbps + 1e-12);
  }
});

Deno.test("cli: per-iteration timing adds the best case and p50, p90, p99, p99.9 to the table", async () => {
  const dir = Deno.makeTempDirSync();
  const r = await task([
    ...["--timing", "per-iter", "--max", "2", "--iters", "1000", "--warmup", "1"],
    ...["--csv", `${dir}/a.csv`],
  ]);
  assertEquals(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  const columns = lines.find((l) => /^#\s+size\s+count/.test(l))!.slice(1).trim().split(/\s+/);
  assertEquals(columns.slice(13, 18), ["best", "p50", "p90", "p99", "p99.9"]);
  for (const row of lines.filter((l) => !l.startsWith("#"))) {
    const [best, p50, p90, p99, p999] = row.trim().split(/\s+/).slice(13, 18).map(Number);
    assert_(best > 0 && best <= p50 && p50 <= p90 && p90 <= p99 && p99 <= p999, row);
  }
  const csv = parse(Deno.readTextFileSync(`${dir}/a.csv`), { columns: true }) as Record<
    string,
    string
  >[];
  assert_(csv.every((row) => Number(row.p999_us) > 0), "p99.9 kept");
  // Under a thousand samples a p99.9 is the slowest one: left out, and the footer says so.
  const few = await task(["--timing", "per-iter", "--max", "2", "--iters", "20", "--warmup", "1"]);
  assertEquals(few.code, 0, few.stderr);
  const rows = few.stdout.split("\n").filter((l) => /^\s+\d/.test(l));
  assert_(rows.every((l) => l.trim().split(/\s+/)[17] === "-"), few.stdout);
  assert_(/# p99\.9: 2 of 2 sizes had under 1000 samples/.test(few.stdout), few.stdout);
});

Deno.test("cli: Ctrl-C tears the ranks down and leaves only complete CSV rows", async () => {
  const dir = Deno.makeTempDirSync();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      ...["run", "-A", new URL("../scripts/allreduce.ts", import.meta.url).pathname],
      ...["--procs", "2", "--min", "2^10", "--max", "2^26", "--csv", `${dir}/a.csv`],
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const rows = () => {
    try {
      return Deno.readTextFileSync(`${dir}/a.csv`).split("\n").length - 2;
    } catch {
      return 0;
    }
  };
  const deadline = Date.now() + 60_000;
  while (rows() < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  child.kill("SIGINT");
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  assertEquals(out.code, 130, stderr);
  assert_(/interrupted by SIGINT; .*a\.csv holds the complete rows/.test(stderr), stderr);
  const text = Deno.readTextFileSync(`${dir}/a.csv`);
  assert_(text.endsWith("\n"));
  const lines = text.trim().split("\n");
  assert_(lines.length >= 4 && lines.length < 18, `${lines.length} lines`);
  for (const l of lines) assertEquals(l.split(",").length, CSV_HEADER.length, l);
});

Deno.test("cli: sweep and compare refuse bad input with one line and exit 2", async () => {
  const dir = Deno.makeTempDirSync();
  const header = "primitive,transport,memory,algorithm,procs,floats,bytes,iters,time_us,min_us," +
    "max_us,gbps,algbw_gbs,busbw_gbs,wrong\n";
  const fixture = (name: string) => `${fixtures}/${name}`;
  const fixtures = Deno.makeTempDirSync();
  Deno.writeTextFileSync(
    fixture("cut.csv"),
    header + "allreduce,shm,shared,auto,2,1,4,10,1,1,1,0.03,0,0,0\nallreduce,shm,sha",
  );
  Deno.writeTextFileSync(
    fixture("zero_ranks.csv"),
    header + "allreduce,shm,shared,auto,0,1,4,10,1,1,1,0.03,0,0,0\n",
  );
  Deno.writeTextFileSync(
    fixture("negative.csv"),
    header + "allreduce,shm,shared,auto,2,1,4,10,1,1,1,-3,0,0,0\n",
  );
  const cases: [string, string[], RegExp][] = [
    ["sweep", ["--primitives", "allreduce,gossip"], /--primitives gossip .*accepted: sendrecv, /],
    ["sweep", ["--transports", ""], /--transports needs at least one of shm, worker, ws/],
    ["sweep", ["--procs", "2,x"], /--procs x .* from 1 to 256/],
    ["sweep", ["--op", "xor"], /--op xor .*accepted: sum/],
    ["sweep", ["--transport", "shm"], /unknown flag --transport: did you mean --transports\?/],
    ["compare", [], /no input files/],
    ["compare", ["a.csv", "--out", `${dir}/r.svg`], /--out .*r\.svg .* expected \*\.html/],
    ["compare", ["a.csv", "--tolerance", "150"], /--tolerance 150 .* from 0 to 100/],
    ["compare", [`${dir}/missing.csv`], /missing\.csv/],
    ["compare", [dir], /cannot read it \(IsADirectory: pass files\)/],
    [
      "compare",
      ["tests/fixtures/allreduce_shm.csv", "--out", "/proc/x/r.html"],
      /--out \/proc\/x\/r\.html is not accepted: cannot create files in \/proc/,
    ],
    ["compare", [fixture("cut.csv")], /cut\.csv: broken CSV/],
    [
      "compare",
      [fixture("zero_ranks.csv")],
      /zero_ranks\.csv: .* has procs 0 \(expected an integer ≥ 1\)/,
    ],
    ["compare", [fixture("negative.csv")], /negative\.csv: .* bandwidth -3 Gb\/s/],
    ["sweep", ["--out", fixture("cut.csv")], /--out .*cut\.csv is not accepted: it is a file/],
    ["sweep", ["--out", "/proc/sweep"], /--out \/proc\/sweep .* cannot create files in \/proc/],
  ];
  for (const [script, argv, message] of cases) {
    const out = script === "sweep" && !argv.includes("--out") ? ["--out", dir] : [];
    const r = await task([...argv, ...out], script);
    const what = `${script} ${argv.join(" ")}`;
    assertEquals(r.code, 2, `${what}: ${r.stderr}`);
    assertEquals(r.stderr.trim().split("\n").length, 1, what);
    assert_(message.test(r.stderr), `${what}: ${r.stderr}`);
  }
  assertEquals([...Deno.readDirSync(dir)].length, 0);
});

Deno.test("cli: sweep runs the matrix and says which combinations it skipped and why", async () => {
  const dir = Deno.makeTempDirSync();
  const r = await task([
    ...["--primitives", "sendrecv,allreduce", "--transports", "shm,gpu", "--memory", "host,shared"],
    ...["--procs", "2,3", "--max", "64", "--iters", "3", "--warmup", "1", "--out", dir],
  ], "sweep");
  assertEquals(r.code, 0, r.stderr);
  const index = Deno.readTextFileSync(`${dir}/index.csv`).trim().split("\n")
    .map((l) => l.split(",").slice(0, 6).join(" "));
  const gpu = NO_GPU ? "skipped 0" : "ok 7"; // where no adapter exists, the sweep says so
  assertEquals(index, [
    "primitive transport memory procs status rows",
    "sendrecv shm host 2 ok 7",
    "sendrecv shm host 3 skipped 0",
    "sendrecv shm shared 2 ok 7",
    "sendrecv shm shared 3 skipped 0",
    `sendrecv gpu host 2 ${gpu}`,
    "sendrecv gpu host 3 skipped 0",
    "sendrecv gpu shared 2 skipped 0",
    "sendrecv gpu shared 3 skipped 0",
    "allreduce shm host 2 ok 7",
    "allreduce shm host 3 ok 7",
    "allreduce shm shared 2 ok 7",
    "allreduce shm shared 3 ok 7",
    `allreduce gpu host 2 ${gpu}`,
    `allreduce gpu host 3 ${gpu}`,
    "allreduce gpu shared 2 skipped 0",
    "allreduce gpu shared 3 skipped 0",
  ]);
  assert_(r.stdout.includes("skip sendrecv-shm-host-3: --procs 3 is not accepted"), r.stdout);
  assert_(
    r.stdout.includes("skip allreduce-gpu-shared-2: gpu carries host, gpu, managed memory"),
    r.stdout,
  );
  const csv = Deno.readTextFileSync(`${dir}/allreduce-shm-host-3.csv`).trim().split("\n");
  assertEquals(csv.length, 8);
  assert_(csv.slice(1).every((l) => l.split(",")[14] === "0"), "wrong = 0 on every row");
  const json = JSON.parse(Deno.readTextFileSync(`${dir}/allreduce-shm-host-3.json`));
  assertEquals([json.metadata.options.procs, json.rows.length], [3, 7]);
  // Its own chart and report beside the CSVs, and where it stands as it goes.
  assert_(r.stdout.includes(`chart: ${dir}/chart.svg\nreport: ${dir}/report.html`), r.stdout);
  assert_(Deno.readTextFileSync(`${dir}/chart.svg`).startsWith("<svg"), "an SVG");
  assert_(/→ \S+allreduce-shm-host-2\.csv \(\d+\/16, ETA \d+s\)/.test(r.stdout), r.stdout);

  // compare reads what sweep wrote (a CSV and its sidecar are one run) and writes the chart and
  // the report.
  const run = `${dir}/allreduce-shm-host-2`;
  const c = await task([`${run}.csv`, `${run}.json`, "--out", `${dir}/c.html`], "compare");
  assertEquals(c.code, 0, c.stderr);
  assert_(c.stdout.startsWith("primitive  procs  from_floats  to_floats  fastest"), c.stdout);
  assert_(c.stdout.includes("For allreduce at 2 ranks, shm is fastest at every size."), c.stdout);
  assert_(Deno.readTextFileSync(`${dir}/c.svg`).startsWith("<svg"));
  assert_(Deno.readTextFileSync(`${dir}/c.html`).startsWith("<!doctype html>"));
});
