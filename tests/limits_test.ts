// The machine's limits (bench/limits, `deno task limits`): the task measures every floor and
// ceiling and keeps them per machine; a run reads its rows against them (the CSV's pct_limit, the
// JSON sidecar's metadata, the footer's lines) and says how to measure them where none are kept;
// the bounds follow each primitive's least work; compare plots the share of the limit.
import { parse } from "csv-parse/sync";
import { assert_, assertEquals } from "./_assert.ts";
import {
  limitLines,
  type MachineLimits,
  pctOfLimit,
  sweepBounds,
} from "../bench/limits/machine_limits.ts";
import { chartSpec } from "../bench/compare/chart.ts";
import { toCurves } from "../bench/compare/crossover.ts";
import type { Point } from "../bench/compare/results.ts";
import type { ResultRow } from "../bench/metrics.ts";
import { fingerprintOf, machineFacts } from "../scripts/limits/this_machine.ts";
import { TRANSPORTS } from "../deno/transport_table.ts";
import { taskWithCache } from "./_cache_task.ts";

const flat = (median: number) => ({ median, min: median, max: median, trials: 1 });
const curve = (gbs: number) => ({ bytes: [4096, 2 ** 26], gbs: [flat(gbs), flat(gbs)] });

/** Limits of a made-up machine of `cores` cores: copy 10 GB/s a core, reduce 5, 0.2 µs lines. */
function machine(cores: number, facts = { ...machineFacts(), cores }): MachineLimits {
  return {
    format: 1,
    fingerprint: fingerprintOf(facts),
    machine: facts,
    date: "2026-11-28T12:00:00.000Z",
    cacheLineRoundTripUs: flat(0.2),
    postMessageRoundTripUs: flat(40),
    socketRoundTripUs: flat(15),
    tcpRoundTripUs: flat(50),
    loopbackStreamGBs: flat(4),
    copy: { one: curve(10), all: curve(10 * cores) },
    reduce: { one: curve(5), all: curve(5 * cores) },
    simdPeak: { gflops: flat(45), build: "relaxed" },
  };
}

const row = (over: Partial<ResultRow>) =>
  ({ time_us: 1e6, busbw_gbs: 0, bytes: 2 ** 20, floats: 2 ** 18, ...over }) as ResultRow;

Deno.test("limits: each primitive's bound follows its least work, a rank's share of the cores and the floor", () => {
  const shm = TRANSPORTS.shm.bounds, tcp = TRANSPORTS.tcp.bounds;
  const bound = (
    primitive: "allreduce" | "bcast" | "reduce" | "gather",
    procs: number,
    cores = 2,
  ) =>
    sweepBounds(machine(cores), { bounds: shm, primitive: primitive, procs: procs })!.bandwidth
      .gbs[0];
  // allreduce, 2 ranks: half the bus bytes reduced at 5 GB/s, half copied at 10: 2 / (1/10 + 1/5).
  assertEquals(bound("allreduce", 2).toFixed(3), (2 / 0.3).toFixed(3));
  // bcast: one rank copies the size while the root's time counts too: 2 × 10.
  assertEquals(bound("bcast", 2), 20);
  assertEquals(bound("reduce", 2), 10);
  // gather, 4 ranks: the root alone writes 3/4 of it, the time averaged over 4 — on 4 cores.
  assertEquals(bound("gather", 4, 4), 40);
  // Four ranks on two cores: half a core each.
  assertEquals(bound("bcast", 4) * 2, bound("bcast", 4, 4));
  const b = sweepBounds(machine(2), { bounds: shm, primitive: "allreduce", procs: 2 })!;
  assertEquals(b.latency, { name: "cache-line round trip", roundTripUs: 0.2 });
  // At the bandwidth bound, and at the floor (one way: half the round trip).
  assertEquals(pctOfLimit(row({ busbw_gbs: 2 / 0.3 / 2 }), b).toFixed(6), (50).toFixed(6));
  assertEquals(pctOfLimit(row({ time_us: 0.4 }), b).toFixed(6), (25).toFixed(6));
  // tcp: the loopback stream for every byte, the socket round trip (Deno's above the cores).
  const t = sweepBounds(machine(2), { bounds: tcp, primitive: "allreduce", procs: 2 })!;
  assertEquals([t.bandwidth.gbs, t.latency.roundTripUs], [[4], 15]);
  assertEquals(
    sweepBounds(machine(2), { bounds: tcp, primitive: "allreduce", procs: 4 })!.latency.roundTripUs,
    50,
  );
  assertEquals(sweepBounds(undefined, { bounds: shm, primitive: "allreduce", procs: 2 }), null);
  // A stream's receiver fills a window of blocks: its copy rate is the window's, where the limits
  // hold one of at most that many blocks; else a core's copy into one destination.
  const streams = { ...machine(2) };
  streams.copy = { ...streams.copy, window: { ...curve(4), blocks: 64 } };
  const bw = (window?: number) =>
    sweepBounds(streams, { bounds: shm, primitive: "bw", procs: 2, window })!.bandwidth;
  // bw: one receiver copies every byte, at a core's rate.
  assertEquals([bw().gbs[0], bw(64).gbs[0], bw(128).gbs[0], bw(8).gbs[0]], [4, 4, 4, 10]);
  assertEquals(bw().name, "a core's copy rate into a window of 64 blocks");
  assertEquals(
    sweepBounds(machine(2), { bounds: shm, primitive: "bw", procs: 2 })!.bandwidth.gbs[0],
    10,
    "no window measured",
  );
  assertEquals(
    sweepBounds(streams, { bounds: shm, primitive: "bcast", procs: 2 })!.bandwidth.gbs[0],
    20,
    "a collective: no window",
  );
  assertEquals(
    sweepBounds(machine(2), { bounds: TRANSPORTS.gpu.bounds, primitive: "allreduce", procs: 2 }),
    null,
    "no device",
  );
});

Deno.test("limits: the footer reads the peak against the bound and the smallest size against the round trip", () => {
  const b = sweepBounds(machine(2), {
    bounds: TRANSPORTS.shm.bounds,
    primitive: "bcast",
    procs: 2,
  })!;
  const rows = [
    row({ bytes: 4, floats: 1, time_us: 0.5, busbw_gbs: 0.008 }),
    row({ bytes: 2 ** 24, floats: 2 ** 22, time_us: 1000, busbw_gbs: 15 }),
  ];
  assertEquals(limitLines(rows, b), [
    "# Peak busbw 15.00 GB/s at 16 MiB = 75% of this machine's bound, 20.00 GB/s (a core's copy rate)",
    "# 1-element (4 B) time 0.50 µs = 2.5x the cache-line round trip (0.20 µs)",
    `# Limits: measured 2026-11-28 (machine ${b.fingerprint}; deno task limits --refresh measures again)`,
  ]);
  assertEquals(limitLines(rows, undefined), [
    "# Limits: none measured for this machine (deno task limits measures them)",
  ]);
});

const task = taskWithCache;

Deno.test("limits: a run reads its rows against the kept limits (CSV, sidecar, footer), or says how to measure them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const run = (cache: string) =>
      task(
        ["scripts/allreduce.ts", "--max", "64", "--iters", "20", "--warmup", "5"]
          .concat(["--csv", `${cache}/ar.csv`]),
        cache,
      );
    Deno.mkdirSync(`${dir}/none`);
    const none = await run(`${dir}/none`);
    assert_(
      none.out.includes("# Limits: none measured for this machine (deno task limits"),
      none.err,
    );
    const kept = `${dir}/kept`, limits = machine(navigator.hardwareConcurrency, machineFacts());
    Deno.mkdirSync(`${kept}/dccl/limits`, { recursive: true });
    Deno.writeTextFileSync(
      `${kept}/dccl/limits/${limits.fingerprint}.json`,
      JSON.stringify(limits),
    );
    const { code, out, err } = await run(kept);
    assertEquals(code, 0, err);
    assert_(
      /# Peak busbw [\d.]+ GB\/s at [\d.]+ \w+ = \d+% of this machine's bound/.test(out),
      out,
    );
    assert_(
      /# 1-element \(4 B\) time [\d.]+ µs = [\d.]+x the cache-line round trip \(0\.20 µs\)/.test(
        out,
      ),
      out,
    );
    const rows = parse(Deno.readTextFileSync(`${kept}/ar.csv`), { columns: true }) as Record<
      string,
      string
    >[];
    assert_(
      rows.length === 7 && rows.every((r) => Number(r.pct_limit) > 0),
      "pct_limit in every row",
    );
    const sidecar = JSON.parse(Deno.readTextFileSync(`${kept}/ar.json`));
    assertEquals(sidecar.metadata.limits.fingerprint, limits.fingerprint);
    assertEquals(sidecar.metadata.limits.latency.roundTripUs, 0.2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("limits: deno task limits measures every limit, keeps them per machine and reuses them", async () => {
  const cache = await Deno.makeTempDir();
  try {
    // The suite keeps the machine busy: the sitting is kept all the same, and marked.
    const first = await task(
      ["scripts/limits.ts", "--keep-busy", "--json", `${cache}/l.json`],
      cache,
    );
    assertEquals(first.code, 0, first.err);
    const limits = JSON.parse(Deno.readTextFileSync(`${cache}/l.json`)) as MachineLimits;
    assertEquals(limits.fingerprint, fingerprintOf(machineFacts()));
    const kept = JSON.parse(
      Deno.readTextFileSync(`${cache}/dccl/limits/${limits.fingerprint}.json`),
    ) as MachineLimits;
    assertEquals(kept, limits);
    // How busy the machine was: others' share of the CPUs before and after, and the verdict.
    assertEquals(limits.sitting!.load.length, 2);
    assert_(limits.sitting!.load.every((x) => x >= 0 && x <= 1), JSON.stringify(limits.sitting));
    assertEquals(limits.sitting!.busy, Math.max(...limits.sitting!.load) > 0.25);
    assert_(/measuring .*\(step 1 of \d+\)/.test(first.err), first.err);
    assert_(/\(step 10 of 10, ETA \d+s\)/.test(first.err), first.err);
    const positive = [
      limits.cacheLineRoundTripUs,
      limits.postMessageRoundTripUs,
      limits.tcpRoundTripUs!,
      limits.simdPeak.gflops,
      ...limits.copy.one.gbs,
      ...limits.copy.window!.gbs,
      ...limits.reduce.all.gbs,
    ];
    assert_(positive.every((m) => m.min > 0 && m.min <= m.median && m.median <= m.max), "spreads");
    for (const line of ["cache-line round trip", "postMessage round trip", "SIMD peak", "copy 1"]) {
      assert_(first.out.includes(line), `${line} in\n${first.out}`);
    }
    const again = await task(["scripts/limits.ts"], cache);
    assertEquals(again.code, 0, again.err);
    assert_(again.err.includes(`kept from ${limits.date}`), again.err);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("limits: compare plots a curve's share of the limit where its rows carry it", () => {
  const point = (floats: number, pct?: number): Point => ({
    source: "a.csv",
    primitive: "allreduce",
    procs: 2,
    transport: "shm",
    memory: "shared",
    algorithm: "auto",
    threads: 1,
    type: "f32",
    floats,
    time_us: 1 + floats / 1e3,
    gbps: floats / 100,
    wrong: 0,
    pct_limit: pct,
  });
  const curves = toCurves([point(1, 20), point(1024, 60)]);
  const values = (chartSpec(curves, { ofLimit: true }) as {
    data: { values: { metric: string; value: number }[] };
  })
    .data.values;
  const share = values.filter((v) => v.metric.startsWith("% of the machine's limit"));
  assertEquals(share.map((v) => v.value), [20, 60]);
  assertEquals(values.filter((v) => v.metric.startsWith("Gb/s")), []);
});
