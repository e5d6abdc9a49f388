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
