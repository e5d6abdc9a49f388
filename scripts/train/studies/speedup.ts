/**
 * `speedup`: 1, 2, 4, 8 ranks × shm (threads) and ws (processes) at a global batch of 64: time,
 * speedup T1/Tp, efficiency, Karp–Flatt serial fraction, and an Amdahl fit per transport.
 * @module
 */

import type { TopLevelSpec } from "vega-lite";
import { PROCESS_TRANSPORTS, TRANSPORT_TABLE } from "../../../deno/mod.ts";
import { pct, round, type Row, SCHEMA, type StudyContext, type StudyResult } from "./study.ts";

/** Ranks as threads (the first workers transport) and as processes (the first processes one). */
const TRANSPORTS = [TRANSPORT_TABLE.launching("workers")[0], PROCESS_TRANSPORTS[0]];

export async function speedup(ctx: StudyContext): Promise<StudyResult> {
  const notes: string[] = [];
  let slower = false;
  for (const transport of TRANSPORTS) {
    const times: [number, number][] = [];
    for (const procs of [1, 2, 4, 8]) {
      const s = await ctx.train(
        { transport, procs: String(procs) },
        `${transport}, ${procs} ranks`,
      );
      times.push([procs, s.train_s]);
      const t1 = times[0][1], sp = t1 / s.train_s;
      // Karp–Flatt's serial fraction is a fraction only where the ranks sped the run up.
      const karpFlatt = procs > 1 && sp >= 1
        ? round((1 / sp - 1 / procs) / (1 - 1 / procs), 3)
        : "";
      if (procs > 1 && sp < 1) slower = true;
      ctx.record({
        transport,
        launch: transport === TRANSPORTS[0] ? "threads (workers)" : "processes",
        procs,
        time_s: round(s.train_s, 2),
        speedup: round(sp, 2),
        efficiency: round(sp / procs, 2),
        karp_flatt: karpFlatt,
        test_acc_pct: pct(s.final_test_acc),
      });
    }
    const cores = navigator.hardwareConcurrency;
    const f = amdahlFit(times, cores);
    const fitted = times.filter(([p]) => p > 1 && p <= cores).map(([p]) => p);
    notes.push(
      f === undefined
        ? `${transport}: no Amdahl fit: it needs runs on at least two rank counts from 2 to ` +
          `${cores} (one rank per core; beyond that time slicing, not a serial part, slows the ` +
          `runs), and this machine's ${cores} cores allow ${fitted.join(", ") || "none"}`
        : `${transport}: Amdahl fit over ${fitted.join(", ")} ranks (one per core): serial ` +
          `fraction ${round(f, 3)}, max speedup ${f > 0 ? `${round(1 / f, 1)}×` : "unbounded"}`,
    );
  }
  if (slower) {
    notes.push(
      "karp_flatt is left empty where more ranks were slower than one (speedup below 1): the " +
        "metric then exceeds 1, which measures the ranks' overhead, not a serial fraction",
    );
  }
  return { notes, chart: speedupChart };
}

/**
 * Amdahl's serial fraction f from `[ranks, time]` pairs (ranks 1 first): T(p)/T1 = f + (1 − f)/p,
 * least squares in f over the runs on 2 to `cores` ranks — beyond one rank per core, time slicing
 * slows runs down and the model no longer applies — held to [0, 1]. `undefined` with fewer than
 * two such runs: one point fits any serial fraction.
 */
export function amdahlFit(times: [number, number][], cores: number): number | undefined {
  const t1 = times.find(([p]) => p === 1)?.[1];
  if (t1 === undefined) return undefined;
  const fit = times.filter(([p]) => p > 1 && p <= cores).map((
    [p, t],
  ) => [1 - 1 / p, t / t1 - 1 / p]);
  if (fit.length < 2) return undefined;
  const f = fit.reduce((s, [x, y]) => s + x * y, 0) / fit.reduce((s, [x]) => s + x * x, 0);
  return Math.min(1, Math.max(0, f));
}

/** Speedup and efficiency against ranks, a line per transport beside the ideal, integer rank ticks. */
export function speedupChart(rows: Row[]): TopLevelSpec {
  const ranks = [...new Set(rows.map((r) => Number(r.procs)))].sort((a, b) => a - b);
  const x = {
    field: "procs",
    type: "quantitative" as const,
    title: "ranks",
    scale: { type: "log" as const, base: 2 },
    axis: { values: ranks, format: "d" },
  };
  const panel = (y: string, title: string, ideal: (p: number) => number) => ({
    width: 300,
    height: 240,
    layer: [
      {
        data: { values: ranks.map((p) => ({ procs: p, ideal: ideal(p) })) },
        mark: { type: "line" as const, strokeDash: [4, 4], color: "gray" },
        encoding: { x, y: { field: "ideal", type: "quantitative" as const } },
      },
      {
        mark: { type: "line" as const, point: true },
        encoding: {
          x,
          y: { field: y, type: "quantitative" as const, title },
          color: { field: "transport", type: "nominal" as const, title: null },
          shape: { field: "transport", type: "nominal" as const, title: null },
        },
      },
    ],
  });
  return {
    $schema: SCHEMA,
    title: "Training speedup and efficiency against ranks (dashed: ideal)",
    data: { values: rows },
    hconcat: [
      panel("speedup", "speedup T1/Tp", (p) => p),
      panel("efficiency", "efficiency (speedup / ranks)", () => 1),
    ],
  } as TopLevelSpec;
}
