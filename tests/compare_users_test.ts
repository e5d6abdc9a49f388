// compare as a user reads it (issue: at home in the tools users already run): the fastest curve
// is never slower at the median than another, OSU files of different rank counts never merge, and
// the chart's legend, colours and smallest sizes read right.
import { assert_, assertEquals } from "./_assert.ts";
import { crossovers } from "../bench/compare/crossover.ts";
import { chartSpec } from "../bench/compare/chart.ts";
import { twoCurves } from "./_curves.ts";
import { readResultsFile } from "../deno/files/result_files.ts";

Deno.test("compare: the fastest curve is never slower at the median than its runner-up", () => {
  // A is closer to the fastest on the log average; B is ahead at three sizes of five.
  const curves = twoCurves([1, 1, 1, 1, 1], [1.08, 0.99, 0.99, 0.99, 1.08]);
  const [row, ...rest] = crossovers(curves, { tolerance: 0.1 });
  assertEquals(rest, []);
  assertEquals(row.fastest, "B");
  assert_(row.margin >= 1, `margin ${row.margin}`);
});

Deno.test("compare: OSU files of different rank counts never merge; unsaid ones are refused", async () => {
  const dir = await Deno.makeTempDir();
  const osu = (name: string, us: number) =>
    Deno.writeTextFile(
      `${dir}/${name}`,
      `# OSU MPI Allreduce Latency Test v7.4\n# Size       Avg Latency(us)\n4 ${us}\n8 ${us}\n`,
    );
  await osu("osu_allreduce_p2.txt", 1);
  await osu("osu_allreduce_np4.txt", 5);
  await osu("a.txt", 1);
  await osu("b.txt", 5);
  const compare = async (...files: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", new URL("../scripts/compare.ts", import.meta.url).pathname],
        ...files.map((f) => f.startsWith("-") ? f : `${dir}/${f}`),
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
  };
  const named = await compare("osu_allreduce_p2.txt", "osu_allreduce_np4.txt", "--out", "x.html");
  assertEquals(named.code, 0, named.stderr);
  assert_(
    /^allreduce\s+2\s/m.test(named.stdout) && /^allreduce\s+4\s/m.test(named.stdout),
    named.stdout,
  );
  const suffixed = await compare("a.txt:2", "b.txt:4", "--out", "y.html");
  assertEquals(suffixed.code, 0, suffixed.stderr);
  assert_(/^allreduce\s+4\s/m.test(suffixed.stdout), suffixed.stdout);
  const unsaid = await compare("a.txt", "b.txt", "--out", "z.html");
  assertEquals(unsaid.code, 2, unsaid.stderr);
  assert_(
    /^dccl compare: .*a\.txt and .*b\.txt: OSU output does not say its ranks/.test(unsaid.stderr),
    unsaid.stderr,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("compare: the chart's legend is whole, twenty colours, and 1-byte sizes read 1B", () => {
  const spec = chartSpec(twoCurves([1, 2], [2, 1]));
  const text = JSON.stringify(spec);
  assert_(text.includes('"labelLimit":0'), text);
  const colours = text.match(/"range":\[("#[0-9a-f]{6}",?){20}\]/);
  assert_(colours && new Set(colours[0].match(/#\w+/g)).size === 20, text);
  assert_(text.includes('format(datum.value, \\"d\\") + \\"B\\"'), text);
});

Deno.test("compare: dccl's own table saved as text is read by its header: ranks, transport, algorithm", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      ...["run", "-A", new URL("../scripts/allreduce.ts", import.meta.url).pathname],
      ...["--procs", "3", "--transport", "worker", "--max", "16", "--iters", "2", "--warmup", "1"],
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const file = await Deno.makeTempFile({ suffix: ".txt" });
  await Deno.writeFile(file, out.stdout);
  const points = await Array.fromAsync(readResultsFile(file));
  assertEquals(points.length, 5);
  const { primitive, procs, transport, memory, threads, type } = points[0];
  assertEquals({ primitive, procs, transport, memory, threads, type }, {
    primitive: "allreduce",
    procs: 3,
    transport: "worker",
    memory: "host",
    threads: 1,
    type: "f32",
  });
  assert_(points.every((p) => p.algorithm !== "" && p.wrong === 0), JSON.stringify(points));
  await Deno.remove(file);
});

Deno.test("compare: --metric compares the best case or a percentile, and leaves out rows without it", async () => {
  const dir = await Deno.makeTempDir();
  // A is faster on the mean, B on the tail; C is another tool's output, with no percentiles.
  const header = "primitive,transport,memory,algorithm,procs,count,bytes,iters,time_us,min_us," +
    "max_us,gbps,algbw_gbs,busbw_gbs,wrong,p50_us,p99_us,p999_us";
  const rows = (transport: string, mean: number, p99: number) =>
    [1, 2, 4].map((n) =>
      `latency,${transport},host,auto,2,${n},${4 * n},1000,${mean},${mean},${mean},` +
      `${(32 * n) / mean / 1e3},0,0,0,${mean},${p99},`
    ).join("\n");
  await Deno.writeTextFile(`${dir}/a.csv`, `${header}\n${rows("A", 1, 9)}\n`);
  await Deno.writeTextFile(`${dir}/b.csv`, `${header}\n${rows("B", 2, 3)}\n`);
  const compare = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", new URL("../scripts/compare.ts", import.meta.url).pathname],
        ...[`${dir}/a.csv`, `${dir}/b.csv`, "--out", `${dir}/r.html`, ...args],
      ],
    }).output();
    const text = new TextDecoder();
    return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
  };
  const fastest = (stdout: string) => stdout.match(/^latency\s+2\s+\S+\s+\S+\s+(\S+)/m)?.[1];
  const mean = await compare();
  assertEquals(mean.code, 0, mean.stderr);
  assertEquals(fastest(mean.stdout), "A", mean.stdout);
  const tail = await compare("--metric", "p99_us");
  assertEquals(tail.code, 0, tail.stderr);
  assertEquals(fastest(tail.stdout), "B", tail.stdout);
  const none = await compare("--metric", "p999_us");
  assertEquals(none.code, 2, none.stdout);
  assert_(/no row carries p999_us/.test(none.stderr), none.stderr);
  const bad = await compare("--metric", "p95_us");
  assertEquals(bad.code, 2);
  assert_(/--metric p95_us .* accepted: time_us, best_us, p50_us/.test(bad.stderr), bad.stderr);
  await Deno.remove(dir, { recursive: true });
});
