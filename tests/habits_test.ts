// nccl-tests' and OSU's habits: their short flags written as ours or refused naming their meaning,
// the table in nccl-tests' columns and footer within 120 columns, and `--format osu` in OSU's own
// layout, each against the real layouts in tests/fixtures and read back by compare's readers.
import { assert_, assertEquals, assertThrows } from "./_assert.ts";
import { translateHabits } from "../scripts/common/foreign_flags.ts";
import { UsageError } from "../scripts/common/flags.ts";
import { osuLayout, tableLayout } from "../bench/report_format.ts";
import type { ResultRow } from "../bench/metrics.ts";
import { readResultsFile } from "../deno/files/result_files.ts";

const FIXTURES = new URL("./fixtures/", import.meta.url).pathname;

Deno.test("habits: nccl-tests' and OSU's short flags become ours", () => {
  assertEquals(
    translateHabits("-o max -d bfloat16 -t 2 -g 1 -c 1 -a 1 -z 0 -r 1 -e 64".split(" ")),
    ["--op", "max", "--dtype", "bf16", "--threads", "2", "--root", "1", "-e", "64"],
  );
  assertEquals(translateHabits(["-dhalf", "-d", "double", "-d", "int32", "-d", "f32"]), [
    ...["--dtype", "f16", "--dtype", "f64", "--dtype", "i32", "--dtype", "f32"],
  ]);
  assertEquals(
    translateHabits("-m 1:1024 -x 10 -i 100 -f -T mpi_float".split(" ")),
    ["--min", "1B", "--max", "1024B", "--warmup", "10", "-i", "100", "--full", "--dtype", "f32"],
  );
  assertEquals(translateHabits(["-m", "4096"]), ["--max", "4096B"]);
  assertEquals(translateHabits(["-m", "64:"]), ["--min", "64B"]);
  // -f with a number is nccl-tests' step factor; alone (or before a flag) OSU's full output.
  assertEquals(translateHabits(["-f", "4", "-b", "8"]), ["--step-factor", "4", "-b", "8"]);
  assertEquals(translateHabits(["-f", "-m", "8"]), ["--full", "--max", "8B"]);
  assertEquals(translateHabits(["--", "-d", "float"]), ["--", "-d", "float"]);
});

Deno.test("habits: what means nothing here is refused in one line, naming its meaning there", () => {
  for (
    const [argv, message] of [
      ["-c 0", /^-c 0 \(nccl-tests: whether to check results\) is not accepted: every size/],
      ["-g 2", /^-g 2 \(nccl-tests: devices per thread\) is not accepted: each rank drives one/],
      ["-a 3", /^-a 3 \(nccl-tests: report .*\) is not accepted: the table's time is the mean/],
      [
        "-z 1",
        /^-z 1 \(nccl-tests: wait for each collective .*\) is not accepted: .*--timing per-iter$/,
      ],
      ["-d int8", /^-d int8 \(nccl-tests: the element type\) is not accepted: accepted: float,/],
      ["-d cuda", /^-d cuda \(OSU: buffers on an accelerator\) is not accepted: give --memory gpu/],
      [
        "-T mpi_char",
        /^-T mpi_char \(OSU: the MPI datatype\) is not accepted: accepted: mpi_float/,
      ],
      ["-o all", /^-o all \(nccl-tests: every op in turn\)/],
      ["-G 1", /^-G \(nccl-tests: CUDA graph launches\) is not accepted: it means nothing here$/],
      ["-m x:y", /^-m x:y \(OSU: the message sizes\) is not accepted: expected MIN:MAX or MAX/],
      ["-d", /^-d needs a value$/],
    ] as const
  ) {
    assertThrows(() => translateHabits(argv.split(" ")), UsageError as ErrorConstructor, message);
  }
});

/** A row with every field set, as large as a real one gets. */
function row(overrides: Partial<ResultRow> = {}): ResultRow {
  return {
    primitive: "allreduce",
    transport: "tcp",
    memory: "host",
    algorithm: "auto",
    procs: 8,
    floats: 268435456,
    bytes: 1073741824,
    iters: 2,
    time_us: 17645601.42,
    min_us: 17000000,
    max_us: 18000000,
    gbps: 0.49,
    algbw_gbs: 0.061,
    busbw_gbs: 0.107,
    wrong: 0,
    timing: "back-to-back",
    p50_us: 17645601.42,
    p99_us: 17645601.42,
    best_us: 17645601.42,
    p90_us: 17645601.42,
    p999_us: 17645601.42,
    picked: "recursive_doubling",
    migrations: 0,
    migrated_bytes: 0,
    touch_us: 0,
    threads: 1,
    dtype: "bf16",
    op: "prod",
    root: -1,
    inplace_time_us: 17645601.42,
    inplace_algbw_gbs: 0.061,
    inplace_busbw_gbs: 0.107,
    inplace_wrong: 0,
    ...overrides,
  };
}

Deno.test("table: nccl-tests' columns in its order, its footer, within 120 columns", async () => {
  const layout = tableLayout();
  const fixture = await Deno.readTextFile(`${FIXTURES}all_reduce_perf.txt`);
  const titles = (text: string) =>
    text.split("\n").find((l) => /^#\s+size\s+count/.test(l))!.slice(1).trim().split(/\s+/);
  assertEquals(titles(layout.title), [...titles(fixture), "algorithm"]);
  const [forms] = layout.title.split("\n");
  assert_(/^#\s+out-of-place\s+in-place$/.test(forms), forms);
  const rows = [row(), row({ wrong: 3, busbw_gbs: 1, inplace_busbw_gbs: 2 })];
  for (const line of [...layout.title.split("\n"), ...rows.map(layout.line)]) {
    assert_(line.length <= 120, `${line.length} columns: ${line}`);
  }
  assertEquals(
    layout.footer(rows),
    [
      "# Out of bounds values : 3 FAILED",
      "# Avg bus bandwidth    : 0.8035",
    ].join("\n"),
  );
  const footer = fixture.split("\n").filter((l) => /^# (Out of bounds|Avg bus)/.test(l));
  assertEquals(
    layout.footer([row({ busbw_gbs: 0.09, inplace_busbw_gbs: 0.09 })]).split("\n")
      .map((l) => l.split(":")[0]),
    footer.map((l) => l.split(":")[0]),
  );
  // compare reads the table back as nccl-tests output.
  const file = await Deno.makeTempFile({ suffix: "_all_reduce_perf.txt" });
  await Deno.writeTextFile(file, [layout.title, layout.line(row())].join("\n"));
  const [point] = await Array.fromAsync(readResultsFile(file));
  assertEquals([point.primitive, point.floats, point.type], ["allreduce", 268435456, "bf16"]);
  await Deno.remove(file);
});

Deno.test("table: a footer line warns where a few slow samples decided a size's time, and only there", () => {
  const layout = tableLayout();
  const calm = [row({ time_us: 12, p50_us: 10 }), row({ time_us: 12.5, p50_us: 10 })];
  assert_(!layout.footer(calm).includes("Spread"), layout.footer(calm));
  const busy = [...calm, row({ bytes: 4096, time_us: 73, p50_us: 10 })];
  assertEquals(
    layout.footer(busy).split("\n").at(-1),
    "# Spread: at 1 of 3 sizes the time is over 1.25x the median sample (7.3x at 4 KiB): a few " +
      "slow samples decided them; the machine was busy: run again, or with fewer ranks than cores",
  );
});

Deno.test("table: --format osu prints OSU's layout, which compare reads as OSU", async () => {
  const layout = osuLayout({ primitive: "allreduce", dtype: "f32" });
  const text = await Deno.readTextFile(`${FIXTURES}osu_allreduce.txt`);
  const fixture = text.slice(text.indexOf("# OSU")).split("\n");
  const lines = layout.title.split("\n");
  assertEquals(lines[0], "# OSU MPI Allreduce Latency Test (dccl)");
  assertEquals(lines.slice(1), fixture.slice(1, 3));
  assertEquals(layout.line(row({ bytes: 4, time_us: 0.72 })), fixture[3]);
  const full = osuLayout({ primitive: "bcast", dtype: "i32", full: true });
  assertEquals(full.title.split("\n"), [
    "# OSU MPI Broadcast Latency Test (dccl)",
    "# Datatype: MPI_INT.",
    "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations",
  ]);
  assertEquals(
    full.line(row({ bytes: 1024, time_us: 2.5, min_us: 2, max_us: 3, iters: 1000 })),
    "1024                    2.50              2.00              3.00        1000",
  );
  const file = await Deno.makeTempFile({ suffix: ".txt" });
  await Deno.writeTextFile(file, [full.title, full.line(row({ bytes: 1024 }))].join("\n"));
  const [point] = await Array.fromAsync(readResultsFile(file, 4));
  assertEquals([point.primitive, point.procs], ["bcast", 4]);
  await Deno.remove(file);
});
