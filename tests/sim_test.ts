// The simulated transport (`sim`): the real algorithms over a modelled network, exact at scale
// with real payloads, timed as the closed forms say where the model is theirs, and failing fast
// where ranks disagree.
import { assert_, assertEquals } from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import { runRanks } from "./_spawn_ranks.ts";
import type { CheckCase } from "./ranks/check_rank.ts";
import type { TimingArgs } from "./ranks/sim_timing_rank.ts";
import { algorithmsFor } from "../primitives/auto.ts";
import { DEFAULT_MODEL, type SimModel } from "../primitives/transports/sim_model.ts";
import { SIM } from "../primitives/transports/sim.ts";
import { PRIMITIVES } from "../bench/cases.ts";
import type { CollectiveName } from "../primitives/collectives/collective_table.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import { parseFlags } from "../scripts/common/flags.ts";

/** `hosts` × `perHost` ranks of the default model, with `more` changed. */
function model(hosts: number, perHost = 1, more: Partial<SimModel> = {}): SimModel {
  return { ...DEFAULT_MODEL, hosts, perHost, ...more };
}

for (const size of [1, 3, 7]) {
  Deno.test(`every primitive, algorithm, op and count is exact: sim, ${size} ranks`, async () => {
    const cases = matrix("sim", size);
    const wrong = await runRanks<number[]>("check_rank.ts", {
      size,
      transport: "sim",
      transportOptions: model(size),
      args: cases,
    });
    assertEquals(failures(cases, wrong), []);
  });
}

// At scale what is new is the algorithms' shapes: every collective × every algorithm at a few
// counts (odd ones, and fewer elements than ranks), at non-powers of two up to 64 and at 64, on
// hosts of several ranks (the intra-host links) and a tree fabric.
for (const [size, perHost] of [[13, 1], [31, 1], [63, 3], [64, 4]]) {
  Deno.test(`every collective and algorithm is exact: sim, ${size} ranks`, async () => {
    const cases: CheckCase[] = [];
    for (const [primitive, spec] of Object.entries(PRIMITIVES)) {
      if (!spec.collective || spec.flow || spec.overlap || spec.traffic) continue;
      const algorithms = algorithmsFor(spec.collective as CollectiveName, { transport: SIM });
      for (const algorithm of ["auto", ...algorithms]) {
        for (const count of [1, 7, 1001]) {
          cases.push({
            primitive: primitive as CheckCase["primitive"],
            algorithm,
            count,
            op: "sum",
            dtype: "f32",
            memory: "host",
            root: size - 2,
          });
        }
      }
    }
    const fabric = { kind: "tree", hostsPerLeaf: 4, oversubscription: 2 } as const;
    const wrong = await runRanks<number[]>("check_rank.ts", {
      size,
      transport: "sim",
      transportOptions: model(size / perHost, perHost, { fabric }),
      args: cases,
    });
    assertEquals(failures(cases, wrong), []);
  });
}

/** The slowest rank's virtual µs for one call after a barrier, with whether all were exact. */
async function timed(m: SimModel, args: TimingArgs): Promise<number> {
  const size = m.hosts * m.perHost;
  const got = await runRanks<{ us: number; ok: boolean }>("sim_timing_rank.ts", {
    size,
    transport: "sim",
    transportOptions: m,
    args,
  });
  assert_(got.every((g) => g.ok), `${args.collective} ${args.algorithm}: a wrong result`);
  return Math.max(...got.map((g) => g.us));
}

// The closed forms' model: α per message, β per byte, nothing else (o = g = γ = 0).
const ALPHA = 5, GBPS = 10, BETA = 8e-3 / GBPS;
const closedForm = (hosts: number) =>
  model(hosts, 1, { inter: { latencyUs: ALPHA, gbps: GBPS }, overheadUs: 0, reduceGBps: 0 });

Deno.test("sim times the algorithms as their closed forms at 64 and 256 ranks", async () => {
  const n = 4 * 65536; // bytes: 2^16 floats
  const cases: [number, TimingArgs, number][] = [];
  for (const p of [64, 256]) {
    const lg = Math.log2(p);
    cases.push(
      [
        p,
        { collective: "allreduce", algorithm: "ring", count: n / 4 },
        2 * (p - 1) * ALPHA + 2 * ((p - 1) / p) * n * BETA,
      ],
      [
        p,
        { collective: "allreduce", algorithm: "recursive_doubling", count: n / 4 },
        lg * (ALPHA + n * BETA),
      ],
      [
        p,
        { collective: "allreduce", algorithm: "rabenseifner", count: n / 4 },
        2 * lg * ALPHA + 2 * ((p - 1) / p) * n * BETA,
      ],
      [p, { collective: "bcast", algorithm: "binomial", count: n / 4 }, lg * (ALPHA + n * BETA)],
      [p, { collective: "reduce", algorithm: "binomial", count: n / 4 }, lg * (ALPHA + n * BETA)],
    );
  }
  for (const [p, args, formula] of cases) {
    const us = await timed(closedForm(p), args);
    const off = Math.abs(us / formula - 1);
    assert_(
      off < 0.03,
      `${args.collective} ${args.algorithm}, ${p} ranks: ${us.toFixed(1)} µs, closed form ${
        formula.toFixed(1)
      } µs (${(off * 100).toFixed(1)}% off)`,
    );
  }
});

Deno.test("sim: phantom payloads time as real ones, and 1024 ranks × 2^20 floats run", async () => {
  const args: TimingArgs = { collective: "allreduce", algorithm: "rabenseifner", count: 65536 };
  const real = await timed(model(64), args);
  const phantom = await timed(model(64, 1, { payload: "phantom" }), args);
  assertEquals(phantom, real);
  const big = await timed(model(128, 8, { payload: "phantom" }), { ...args, count: 2 ** 20 });
  assert_(big > 0 && Number.isFinite(big), `${big} µs`);
});

Deno.test("sim: a host's ranks share its link, and an oversubscribed tree slows what crosses it", async () => {
  const args: TimingArgs = { collective: "allreduce", algorithm: "ring", count: 2 ** 18 };
  const flat = await timed(model(16, 1), args);
  const tree = await timed(
    model(16, 1, { fabric: { kind: "tree", hostsPerLeaf: 4, oversubscription: 4 } }),
    args,
  );
  // A ring crosses between leaves at 1 of each 4 hops; each uplink then carries one host's link.
  assert_(tree >= flat, `tree ${tree} µs, flat ${flat} µs`);
  const shared = await timed(model(4, 4, { intra: { latencyUs: 0.5, gbps: 100 } }), args);
  assert_(shared < flat, `4 hosts × 4 ranks ${shared} µs, 16 hosts ${flat} µs`);
});

Deno.test("sim-calibrate: a model from a cluster's latency and bw runs, which --sim-model reads; a bad file is one line", async () => {
  const dir = await Deno.makeTempDir();
  const runs = "docs/results/2026-12-02-sim/calibration_5gbit";
  const calibrate = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "scripts/sim_calibrate.ts", ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
  try {
    const out = `${dir}/model.json`;
    const made = await calibrate([
      "--latency",
      `${runs}/latency.csv`,
      "--bw",
      `${runs}/bw.csv`,
      "--out",
      out,
    ]);
    assertEquals(made.code, 0, new TextDecoder().decode(made.stderr));
    const model = JSON.parse(await Deno.readTextFile(out));
    // The runs' 1-float one-way 17.886 µs less 2 × 0.2, and 4.765 Gb/s at 4M floats.
    assertEquals(model.inter, { latencyUs: 17.49, gbps: 4.765 });
    const plan = planRun(
      "allreduce",
      parseFlags(BENCHMARK_FLAGS, ["--transport", "sim", "--procs", "4", "--sim-model", out]),
      { availableBytes: 1e10 },
    );
    assertEquals(plan.model?.inter, model.inter);
    await Deno.writeTextFile(`${dir}/junk.csv`, "not,a,result\n1,2,3\n");
    const bad = await calibrate(["--latency", `${dir}/junk.csv`, "--bw", `${runs}/bw.csv`]);
    const lines = new TextDecoder().decode(bad.stderr).trim().split("\n");
    assertEquals(bad.code, 2);
    assertEquals(lines.length, 1, lines.join("\n"));
    assert_(
      lines[0].startsWith(`dccl sim-calibrate: --latency ${dir}/junk.csv is not accepted`),
      lines[0],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
