// Kept limits as a careless or hostile local user leaves them (files planted under the cache
// path of this machine's fingerprint): every value that no sitting measures is refused in one line
// naming the file and `deno task limits --refresh`, before the run starts; a FIFO there answers
// at once; a sitting on a busy machine is not kept unless told; a run that beats its limits says
// they look stale.
import { assert_, assertEquals } from "./_assert.ts";
import { limitsProblem } from "../bench/limits/limits_check.ts";
import { limitLines, type MachineLimits, sweepBounds } from "../bench/limits/machine_limits.ts";
import type { ResultRow } from "../bench/metrics.ts";
import { fingerprintOf, machineFacts } from "../scripts/limits/this_machine.ts";
import { TRANSPORTS } from "../deno/transport_table.ts";
import { taskWithCache } from "./_cache_task.ts";

const flat = (median: number) => ({ median, min: median, max: median, trials: 9 });
const curve = (gbs: number) => ({ bytes: [4096, 2 ** 26], gbs: [flat(gbs), flat(gbs)] });
const FACTS = machineFacts();
const FINGERPRINT = fingerprintOf(FACTS);

/** Limits a sitting of this machine could have measured. */
function good(): MachineLimits {
  return {
    format: 1,
    fingerprint: FINGERPRINT,
    machine: FACTS,
    date: "2026-11-28T12:00:00.000Z",
    cacheLineRoundTripUs: flat(0.2),
    postMessageRoundTripUs: flat(40),
    socketRoundTripUs: flat(15),
    tcpRoundTripUs: flat(50),
    loopbackStreamGBs: flat(4),
    copy: { one: curve(10), all: curve(20) },
    reduce: { one: curve(5), all: curve(10) },
    simdPeak: { gflops: flat(45), build: "relaxed" },
    sitting: { load: [0.01, 0.02], busy: false },
  };
}

/** Limits as a planted file may hold anything in them. */
// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

/** `good()` with `edit` applied to a copy. */
function planted(edit: (l: Loose) => void): unknown {
  const l = structuredClone(good()) as Loose;
  edit(l);
  return l;
}

// The outside check's plants, each with what the refusal names.
const PLANTS: [string, (l: Loose) => void, RegExp][] = [
  ["negative", (l) => l.copy.one.gbs[0].median = -7.5, /copy\.one\.gbs\[0\]\.median is -7\.5/],
  ["zero", (l) => l.cacheLineRoundTripUs.median = 0, /cacheLineRoundTripUs\.median is 0/],
  ["1e308", (l) => l.loopbackStreamGBs.max = 1e308, /loopbackStreamGBs\.max is 1e\+308, outside/],
  ["1e-300", (l) => l.tcpRoundTripUs.min = 1e-300, /tcpRoundTripUs\.min is 1e-300, outside/],
  ["a NaN string", (l) => l.simdPeak.gflops.median = "NaN", /simdPeak\.gflops\.median is "NaN"/],
  ["an empty curve", (l) => l.reduce.all = { bytes: [], gbs: [] }, /reduce\.all holds 0 sizes/],
  [
    "a window of no blocks",
    (l) => l.copy.window = { ...structuredClone(l.copy.one), blocks: 0 },
    /copy\.window\.blocks is 0/,
  ],
  ["a window's bad curve", (l) => l.copy.window = { blocks: 64 }, /copy\.window is not a curve/],
  ["cores 0", (l) => l.machine.cores = 0, /machine\.cores is 0/],
  ["cores many", (l) => l.machine.cores = "many", /machine\.cores is "many"/],
  ["no copy", (l) => delete l.copy, /copy is not a pair of curves/],
  [
    "min above max",
    (l) => l.copy.all.gbs[1] = { median: 5, min: 9, max: 6, trials: 3 },
    /min ≤ median ≤ max/,
  ],
  ["sizes descending", (l) => l.copy.one.bytes = [2 ** 26, 4096], /copy\.one\.bytes\[1\] is 4096/],
  [
    "a line slower than a message",
    (l) => l.cacheLineRoundTripUs = flat(400),
    /is not below the postMessage round trip/,
  ],
  ["another machine", (l) => l.fingerprint = "0123456789abcdef", /is not this machine's/],
  [
    "infinity",
    (l) => l.postMessageRoundTripUs.max = Infinity,
    /postMessageRoundTripUs\.max is null/,
  ],
];

Deno.test("kept limits: every value no sitting measures is refused, naming the field", () => {
  assertEquals(limitsProblem(good(), FACTS, FINGERPRINT), undefined);
  for (const [what, edit, named] of PLANTS) {
    // Through JSON, as a file holds them (Infinity and NaN become null there).
    const problem = limitsProblem(JSON.parse(JSON.stringify(planted(edit))), FACTS, FINGERPRINT);
    assert_(problem !== undefined && named.test(problem), `${what}: ${problem}`);
  }
});

/** Runs a 1-float allreduce with `cache` as the cache folder, its CSV in `out`. */
async function allreduce(cache: string, out: string) {
  const run = await taskWithCache([
    "scripts/allreduce.ts",
    ...["--max", "1", "--iters", "2", "--warmup", "0", "--csv", `${out}/run.csv`],
  ], cache);
  return { ...run, err: run.err.trim() };
}

Deno.test("kept limits: a planted file stops a run before it starts, in one line naming it and the way out; a FIFO answers at once", async () => {
  const cache = await Deno.makeTempDir(), out = await Deno.makeTempDir();
  const path = `${cache}/dccl/limits/${FINGERPRINT}.json`;
  try {
    Deno.mkdirSync(`${cache}/dccl/limits`, { recursive: true });
    for (
      const [what, text, why] of [
        ["negative", JSON.stringify(planted(PLANTS[0][1])), PLANTS[0][2]],
        ["not JSON", "{", /it is not JSON/],
        ["a FIFO", undefined, /it is not a regular file/],
      ] as [string, string | undefined, RegExp][]
    ) {
      try {
        Deno.removeSync(path);
      } catch { /* none yet */ }
      if (text === undefined) await new Deno.Command("mkfifo", { args: [path] }).output();
      else Deno.writeTextFileSync(path, text);
      const run = await allreduce(cache, out);
      assertEquals(run.code, 2, `${what}: ${run.err}`);
      const expected = new RegExp(
        `^dccl allreduce: ${path} holds no limits this run can read against \\(.*${why.source}.*\\): ` +
          `deno task limits --refresh measures them again$`,
      );
      assert_(expected.test(run.err), `${what}: ${run.err}`);
      assertEquals([...Deno.readDirSync(out)], [], `${what}: nothing written`);
    }
    // The file as a sitting wrote it is read against.
    Deno.removeSync(path);
    Deno.writeTextFileSync(path, JSON.stringify(good()));
    const run = await allreduce(cache, out);
    assertEquals(run.code, 0, run.err);
    assert_(/# Limits: measured 2026-11-28/.test(run.out), run.out);
  } finally {
    await Deno.remove(cache, { recursive: true });
    await Deno.remove(out, { recursive: true });
  }
});

const row = (over: Partial<ResultRow>) =>
  ({ time_us: 1e6, busbw_gbs: 0, bytes: 2 ** 20, floats: 2 ** 18, ...over }) as ResultRow;

Deno.test("kept limits: a run above its bound or below its floor, or limits of a busy sitting, say the limits look stale", () => {
  const bounds = (l: MachineLimits) =>
    sweepBounds(l, { bounds: TRANSPORTS.shm.bounds, primitive: "allreduce", procs: 2 })!;
  const fine = limitLines([row({ busbw_gbs: 3, time_us: 50 })], bounds(good()));
  assertEquals(fine.filter((l) => l.includes("stale")), []);
  const fast = limitLines([row({ busbw_gbs: 50, time_us: 0.05 })], bounds(good()));
  assertEquals(fast.filter((l) => l.includes("stale")), [
    "# Limits look stale: its peak busbw is above the bandwidth bound and its 262144-element " +
    "time is below the floor (half the cache-line round trip); deno task limits --refresh " +
    "measures them again on an idle machine",
  ]);
  const busy = { ...good(), sitting: { load: [0.97, 0.5], busy: true } };
  assertEquals(
    limitLines([row({ busbw_gbs: 3, time_us: 50 })], bounds(busy)).at(-1),
    "# Limits look stale: measured on a busy machine (others used 97% of the CPUs); deno task " +
      "limits --refresh measures them again on an idle machine",
  );
});
