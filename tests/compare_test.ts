// `compare` on fixture CSVs and on recorded OSU and nccl-tests output: the crossover table computed
// from the data, a chart that is an SVG with one line per curve, wrong results flagged and never
// compared, and files of a million rows read in little memory.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import {
  crossovers,
  formatCrossovers,
  toCurves,
  wrongResults,
} from "../bench/compare/crossover.ts";
import type { Point } from "../bench/compare/results.ts";
import { readResultsFile as readResults } from "../deno/files/result_files.ts";
import {
  CHART_POINTS_PER_CURVE,
  chartSpec,
  renderHtml,
  renderSvg,
} from "../bench/compare/chart.ts";
import { CSV_COLUMNS } from "../bench/metrics.ts";
import { twoCurves } from "./_curves.ts";

const FIXTURES = new URL("./fixtures/", import.meta.url).pathname;

const fixture = (name: string): Promise<Point[]> =>
  Array.fromAsync(readResults(`${FIXTURES}${name}`));

Deno.test("compare: crossover table from dccl CSVs", async () => {
  const curves = toCurves([
    ...await fixture("allreduce_shm.csv"),
    ...await fixture("allreduce_worker.csv"),
  ]);
  assertEquals(curves.map((c) => `${c.label}@${c.procs}`).sort(), [
    "shm shared@2",
    "shm shared@4",
    "worker host@2",
    "worker host@4",
  ]);
  const rows = crossovers(curves);
  assertEquals(
    rows.map((r) => [r.procs, r.fromFloats, r.toFloats, r.fastest, Number(r.margin.toFixed(2))]),
    [
      [2, 1, 64, "shm shared", 7.5],
      [2, 256, 1024, "worker host", 2],
      [4, 1, 1024, "shm shared", 6.25],
    ],
  );
  const text = formatCrossovers(rows);
  assert_(
    text.includes(
      "For allreduce at 2 ranks, below 256 floats shm shared is fastest; from 256 floats worker host.",
    ),
    text,
  );
  assert_(text.includes("For allreduce at 4 ranks, shm shared is fastest at every size."), text);

  const svg = await renderSvg(curves);
  assert_(svg.startsWith("<svg") && svg.trimEnd().endsWith("</svg>"));
  // Line marks in a panel per rank count, a legend entry per curve, the unit on the axis.
  assert_(svg.includes("mark-line role-mark"));
  for (
    const text of [
      "allreduce, 2 ranks",
      "allreduce, 4 ranks",
      "shm shared",
      "worker host",
      "algbw (GB/s",
    ]
  ) {
    assert_(svg.includes(`>${text}`), text);
  }
  const html = renderHtml(svg, rows, ["a.csv"], 0.1);
  assert_(html.startsWith("<!doctype html>") && html.includes("<td>worker host</td>"));
});

const ranges = (curves: ReturnType<typeof toCurves>, tolerance?: number) =>
  crossovers(curves, { tolerance }).map((r) => `${r.fastest}:${r.fromFloats}-${r.toFloats}`);

Deno.test("compare: curves of other element types line up at equal bytes, labelled by type", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // f32 and bf16 rows of 4 and 8 KiB: bf16 has twice the elements and is faster at 8 KiB.
    const rows = (type: string, width: number, us: number[]) =>
      [CSV_COLUMNS.join(",") + ",type"].concat(
        [4096, 8192].map((bytes, i) =>
          `allreduce,shm,shared,auto,2,${bytes / width},${bytes},10,${us[i]},${us[i]},${us[i]},` +
          `${(bytes * 8) / us[i] / 1e3},0,0,0,${type}`
        ),
      ).join("\n");
    await Deno.writeTextFile(`${dir}/a.csv`, rows("f32", 4, [1, 2]));
    await Deno.writeTextFile(`${dir}/b.csv`, rows("bf16", 2, [1.5, 1]));
    const points = [
      ...await Array.fromAsync(readResults(`${dir}/a.csv`)),
      ...await Array.fromAsync(readResults(`${dir}/b.csv`)),
    ];
    const curves = toCurves(points);
    assertEquals(curves.map((c) => [c.label, [...c.points.keys()]]), [
      ["f32", [1024, 2048]],
      ["bf16", [1024, 2048]],
    ]);
    assertEquals(
      crossovers(curves).map((r) => `${r.fastest}:${r.fromFloats}-${r.toFloats}`),
      ["f32:1024-1024", "bf16:2048-2048"],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("compare: differences within the tolerance are not crossovers", () => {
  // B is 5% faster at 2 floats, A everywhere else; the curves then cross for real at 16.
  const curves = twoCurves([10, 10.5, 10, 10, 20, 20], [12, 10, 12, 12, 10, 10]);
  assertEquals(ranges(curves), ["A:1-8", "B:16-32"]);
  assertEquals(ranges(curves, 0), ["A:1-1", "B:2-2", "A:4-8", "B:16-32"]);
  // A leads the first size by 2%, B every later size by 20%: B is fastest throughout.
  assertEquals(ranges(twoCurves([10, 12, 12], [10.2, 10, 10])), ["B:1-4"]);
  // Level all the way: the one closer to the fastest on average leads, the other is level.
  const level = crossovers(twoCurves([10, 10.5, 10], [10.4, 10, 10.8]));
  assertEquals(level.map((r) => [r.fastest, r.level]), [["A", ["B"]]]);
  assert_(formatCrossovers(level).includes("A is fastest at every size (level with B)."));
});

Deno.test("compare: a margin within the tolerance always comes with a curve level with the fastest", () => {
  const cases: [number[], number[]][] = [
    [[10, 10.5, 10], [10.4, 10, 10.8]],
    [[10, 10, 20, 10, 10], [15, 15, 12, 15, 15]],
    [[10, 12, 12], [10.2, 10, 10]],
    [[10, 10.5, 10, 10, 20, 20], [12, 10, 12, 12, 10, 10]],
    [[10, 9.5, 10, 8, 10], [9.6, 10, 9.3, 10, 9.7]],
  ];
  for (const [a, b] of cases) {
    for (const r of crossovers(twoCurves(a, b))) {
      assertEquals(r.margin <= 1.1, r.level.length > 0, `${a} / ${b}: ${JSON.stringify(r)}`);
    }
  }
});

Deno.test("compare: one size led by another curve between two ranges of one curve is noise", () => {
  const curves = twoCurves([10, 10, 20, 10, 10], [15, 15, 12, 15, 15]);
  assertEquals(ranges(curves), ["A:1-16"]);
  assertEquals(ranges(curves, 0), ["A:1-2", "B:4-4", "A:8-16"]);
  // Two sizes are a range of their own.
  assertEquals(ranges(twoCurves([10, 20, 20, 10], [15, 12, 12, 15])), ["A:1-1", "B:2-4", "A:8-8"]);
  const text = formatCrossovers(crossovers(curves, { tolerance: 0 }));
  assert_(text.includes("below 4 floats A is fastest; at 4 B; from 8 floats A."), text);
});

Deno.test("compare: reads OSU and nccl-tests output next to dccl", async () => {
  const osu = await fixture("osu_allreduce.txt");
  assertEquals(osu.length, 6);
  assertEquals([osu[0].primitive, osu[0].procs, osu[0].floats, osu[0].time_us], [
    "allreduce",
    2,
    1,
    0.72,
  ]);
  const nccl = await fixture("all_reduce_perf.txt");
  assertEquals(nccl.length, 6);
  assertEquals([nccl[5].primitive, nccl[5].procs, nccl[5].floats, nccl[5].time_us], [
    "allreduce",
    2,
    1024,
    10,
  ]);
  assertEquals(nccl[5].gbps, (4096 * 8) / 10 / 1e3);
  const rows = crossovers(toCurves([...await fixture("allreduce_shm.csv"), ...osu, ...nccl]))
    .filter((r) => r.procs === 2);
  assertEquals(rows.map((r) => [r.fromFloats, r.toFloats, r.fastest]), [[1, 1024, "mpi host"]]);
});

Deno.test("compare: reads OSU point-to-point output as dccl's test of the same kind, never as the exchange", async () => {
  // Real osu_latency and osu_bw output (tests/fixtures/README.md): 1-byte rows, a validation column.
  const latency = await fixture("osu_latency.txt"), bw = await fixture("osu_bw.txt");
  assertEquals(latency.length, 23);
  assertEquals([latency[0].primitive, latency[0].procs, latency[0].floats], ["latency", 2, 0.25]);
  assertEquals(latency[0].time_us, 38.25);
  // Bandwidth rows as dccl writes its own: time per message, the bandwidth every stream's.
  assertEquals([bw.at(-1)!.primitive, bw.at(-1)!.time_us], ["bw", 4194304 / 3764.11]);
  assertEquals(bw.at(-1)!.gbps, 3764.11 * 8 / 1e3);
  // osu_bibw's MB/s count both directions: two streams.
  const bibw = await fixture("osu_bibw.txt");
  assertEquals(bibw.at(-1)!.primitive, "bibw");
  assertEquals(bibw.at(-1)!.time_us, (2 * 1048576) / 7000);
  assertEquals(bibw.at(-1)!.gbps, 7000 * 8 / 1e3);
  // osu_mbw_mr says its pairs: that many streams, on twice as many ranks.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/mbw.txt`,
      "# OSU MPI Multiple Bandwidth / Message Rate Test v7.4\n# [ pairs: 2 ] [ window size: 64 ]\n" +
        "# Size                  MB/s        Messages/s\n1                       4.65        4651095.03\n" +
        "4096                 4000.00         976562.50\n",
    );
    const [m1, m4096] = await Array.fromAsync(readResults(`${dir}/mbw.txt`));
    assertEquals([m1.primitive, m1.procs, m4096.time_us], ["mbw_mr", 4, (2 * 4096) / 4000]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // Beside dccl's latency and bw rows, each OSU curve meets the dccl curve of its kind only.
  const dccl = await fixture("allreduce_shm.csv");
  const kind = (primitive: string) => dccl.map((p) => ({ ...p, primitive, procs: 2 }));
  const curves = toCurves([...kind("latency"), ...kind("bw"), ...latency, ...bw]);
  assertEquals(curves.length, 4);
  const met = crossovers(curves);
  assert_(met.length > 0 && met.every((r) => Number.isFinite(r.margin)), JSON.stringify(met));
  // Beside the exchange alone, nothing is compared: every range has one curve.
  const alone = crossovers(toCurves([...kind("sendrecv"), ...latency, ...bw]));
  assert_(alone.every((r) => Number.isNaN(r.margin)), JSON.stringify(alone));
});

Deno.test("compare: OSU and nccl-tests alltoall, gather and scatter output is read as those primitives", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const osu = async (title: string) => {
      const path = `${dir}/osu.txt`;
      await Deno.writeTextFile(
        path,
        `# OSU MPI ${title} Latency Test v7.5\n# Size Avg Latency(us)\n4 2.5\n`,
      );
      return (await Array.fromAsync(readResults(path, 4)))[0];
    };
    assertEquals((await osu("All-to-All Personalized Exchange")).primitive, "alltoall");
    assertEquals((await osu("Gather")).primitive, "gather");
    assertEquals((await osu("Scatter")).primitive, "scatter");
    assertEquals((await osu("Allgather")).primitive, "allgather");
    assertEquals((await osu("Reduce_scatter")).procs, 4);
    // The v collectives' tests as dccl's v collectives, never as the equal-block ones.
    assertEquals((await osu("Alltoallv Personalized Exchange")).primitive, "alltoallv");
    assertEquals((await osu("Allgatherv")).primitive, "allgatherv");
    assertEquals((await osu("Gatherv")).primitive, "gatherv");
    assertEquals((await osu("Scatterv")).primitive, "scatterv");
    const nccl = async (name: string) => {
      const path = `${dir}/${name}.txt`;
      await Deno.writeTextFile(
        path,
        "#  Rank  0 Group  0 Pid 1 on host device  0 [0x01] H100\n" +
          "#       size         count      type   redop    root     time   algbw   busbw #wrong\n" +
          "        4096          1024     float    none      -1    10.00    0.41    0.31      0\n",
      );
      return (await Array.fromAsync(readResults(path)))[0].primitive;
    };
    assertEquals(
      [await nccl("alltoall_perf"), await nccl("gather_perf"), await nccl("scatter_perf")],
      ["alltoall", "gather", "scatter"],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("compare: the chart draws GB/s and µs per op against bytes, as the table does, each curve with its own hue, dash and marker", async () => {
  const curves = toCurves([
    ...await fixture("allreduce_shm.csv"),
    ...await fixture("allreduce_worker.csv"),
  ]);
  const spec = chartSpec(curves) as unknown as {
    title: string;
    facet: { column: { field: string } };
    spec: { layer: { encoding: Record<string, { field: string }> }[] };
    data: { values: { metric: string }[] };
  };
  assert_(spec.title.length > 0);
  assertEquals(spec.facet.column.field, "metric");
  const line = spec.spec.layer[0].encoding;
  assertEquals([line.color.field, line.strokeDash.field, line.shape.field], [
    "curve",
    "curve",
    "curve",
  ]);
  assertEquals([...new Set(spec.data.values.map((v) => v.metric))].sort(), [
    "algbw (GB/s: bytes / time, 1 GB = 1e9 B)",
    "time per op (µs)",
  ]);
  // Two curves: two hues (not two shades of one) and two marker shapes.
  const scale = (channel: string) =>
    (line[channel] as unknown as { scale: { range: string[] } }).scale.range;
  const [a, b] = scale("color").map(hue);
  assert_(Math.abs(a - b) > 60 && Math.abs(a - b) < 300, `hues ${a} and ${b}`);
  assert_(scale("shape")[0] !== scale("shape")[1]);
  // Sizes in bytes: 1 float is 4 B.
  const bytes = (spec.data.values as unknown as { bytes: number }[]).map((v) => v.bytes);
  assertEquals(Math.min(...bytes), 4);
});

/** The hue of `#rrggbb`, degrees. */
function hue(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const max = Math.max(r, g, b), d = max - Math.min(r, g, b);
  const h = max === r ? (g - b) / d : max === g ? 2 + (b - r) / d : 4 + (r - g) / d;
  return (h * 60 + 360) % 360;
}

Deno.test("compare: unreadable input is a one-line error", async () => {
  const notes = await Deno.makeTempFile({ suffix: "notes.txt" });
  await Deno.writeTextFile(notes, "hello\n");
  await assertRejects(() => Array.fromAsync(readResults(notes)), {
    name: "ResultFormatError",
    message: /notes\.txt: not a dccl CSV/,
  });
  await Deno.remove(notes);
});

/** A dccl CSV of `rows` rows cycling through 4 curves of 29 sizes; `wrong(i)` per row. */
/** One CSV row of a 2-rank host allreduce on `transport`: `floats` elements in `us` µs. */
function csvRow(transport: string, floats: number, us: number, wrong: number): string {
  const cells: Record<string, string | number> = {
    primitive: "allreduce",
    transport,
    memory: "host",
    algorithm: "auto",
    procs: 2,
    count: floats,
    bytes: 4 * floats,
    iters: 10,
    time_us: us,
    min_us: us,
    max_us: us,
    gbps: (32 * floats) / us / 1e3,
    algbw_gbs: (4 * floats) / us / 1e3,
    busbw_gbs: (4 * floats) / us / 1e3,
    wrong,
  };
  return CSV_COLUMNS.map((c) => cells[c]).join(",");
}

function bigCsv(rows: number, wrong: (i: number) => number = () => 0): string {
  const lines = [CSV_COLUMNS.join(",")];
  for (let i = 0; i < rows; i++) {
    const floats = 2 ** (i % 29), curve = (i / 29 | 0) % 4;
    const us = (1 + curve) * (1 + floats / 1e5);
    lines.push(csvRow(["shm", "worker", "ws", "tcp"][curve], floats, us, wrong(i)));
  }
  return lines.join("\n") + "\n";
}

Deno.test("compare: sizes with wrong results are flagged, never compared", async () => {
  // shm, the fastest curve, is wrong at 4 floats: worker leads there.
  const csv = await Deno.makeTempFile({ suffix: ".csv" });
  await Deno.writeTextFile(csv, bigCsv(4 * 29, (i) => i === 2 ? 7 : 0));
  const curves = toCurves(await Array.fromAsync(readResults(csv)));
  const wrong = wrongResults(curves);
  assertEquals(wrong, [{ primitive: "allreduce", procs: 2, curve: "shm", sizes: [[4, 7]] }]);
  const rows = crossovers(curves, { tolerance: 0 });
  assertEquals(rows.filter((r) => r.fromFloats === 4).map((r) => r.fastest), ["worker"]);
  const text = formatCrossovers(rows, wrong);
  assert_(text.includes("WRONG RESULTS, not compared: allreduce at 2 ranks, shm: 7 wrong at 4"));
  const svg = await renderSvg(curves);
  assert_(svg.includes(`stroke="#d62728"`), "the wrong size is drawn apart, in red");
  assert_(renderHtml(svg, rows, [csv], 0, wrong).includes("<h2>Wrong results (not compared)</h2>"));
  await Deno.remove(csv);
});

Deno.test("compare: a CSV of a million rows is read in bounded memory, and a sweep's index is skipped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const csv = `${dir}/big.csv`;
    const file = await Deno.open(csv, { write: true, create: true });
    const writer = file.writable.getWriter();
    for (let k = 0; k < 10; k++) {
      await writer.write(
        new TextEncoder().encode(
          bigCsv(100_000).slice(k === 0 ? 0 : CSV_COLUMNS.join(",").length + 1),
        ),
      );
    }
    await writer.close();
    await Deno.writeTextFile(
      `${dir}/index.csv`,
      "primitive,transport,memory,procs,status,rows,wrong,csv,note\n",
    );
    // The whole file is ~90 MB; the run gets a heap a fraction of what holding its rows takes.
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--v8-flags=--max-old-space-size=160", "scripts/compare.ts", csv]
        .concat([`${dir}/index.csv`, "--out", `${dir}/report.html`]),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(stderr);
    assertEquals(code, 0, err);
    assert_(/shm is fastest at every size/.test(new TextDecoder().decode(stdout)));
    assert_(/999884 rows repeated a curve at a size/.test(err), err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("compare: the CLI reads several files given relative to the folder it started in", async () => {
  const out = `${Deno.makeTempDirSync()}/chart.html`;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "../scripts/compare.ts", "allreduce_shm.csv", "allreduce_worker.csv"]
      .concat(["--out", out]),
    cwd: new URL(".", import.meta.url).pathname,
    env: { INIT_CWD: new URL("./fixtures", import.meta.url).pathname },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(stdout);
  assertEquals(code, 0, new TextDecoder().decode(stderr));
  assert_(/worker host/.test(text) && /shm shared/.test(text), text);
  assert_(Deno.statSync(out).size > 0);
});

/** A dccl CSV of two curves over `sizes` distinct sizes whose lead changes every other size. */
function alternatingCsv(sizes: number): string {
  const lines = [CSV_COLUMNS.join(",")];
  for (const [curve, transport] of ["shm", "worker"].entries()) {
    for (let floats = 1; floats <= sizes; floats++) {
      const us = (1 + floats / 1e3) * ((floats >> 1) % 2 === curve ? 1 : 1.5);
      lines.push(csvRow(transport, floats, us, 0));
    }
  }
  return lines.join("\n") + "\n";
}

Deno.test("compare: 200,000 distinct sizes whose lead changes every other size make a table and a chart of bounded size", async () => {
  const csv = await Deno.makeTempFile({ suffix: ".csv" });
  try {
    await Deno.writeTextFile(csv, alternatingCsv(100_000));
    const curves = toCurves(await Array.fromAsync(readResults(csv)));
    const rows = crossovers(curves, { tolerance: 0.1 });
    assert_(rows.length >= 50_000, `${rows.length} ranges`);
    assertEquals(formatCrossovers(rows).split("\n").length, rows.length + 3);
    const spec = chartSpec(curves) as unknown as { data: { values: unknown[] } };
    // Two metrics of at most CHART_POINTS_PER_CURVE points per curve.
    assert_(spec.data.values.length <= 2 * 2 * CHART_POINTS_PER_CURVE, "the chart is thinned");
    assert_((await renderSvg(curves)).startsWith("<svg"));
  } finally {
    await Deno.remove(csv);
  }
});

Deno.test("compare: a negative count or size is refused, naming it", async () => {
  const csv = await Deno.makeTempFile({ suffix: ".csv" });
  try {
    for (const [count, bytes] of [[-4, 16], [4, -16]]) {
      const lines = alternatingCsv(2).split("\n");
      lines[1] = lines[1].replace(/^(([^,]*,){5})1,4,/, `$1${count},${bytes},`);
      await Deno.writeTextFile(csv, lines.join("\n"));
      await assertRejects(() => Array.fromAsync(readResults(csv)), {
        name: "ResultFormatError",
        message: /(count -4 \(expected an integer ≥ 0\)|floats -4 \(expected ≥ 0\))/,
      });
    }
  } finally {
    await Deno.remove(csv);
  }
});
