/**
 * `speedup`: 1, 2, 4, 8 ranks × shm (threads) and ws (processes) at a global batch of 64: time,
 * speedup T1/Tp, efficiency, Karp–Flatt serial fraction, and an Amdahl fit per transport.
 * @module
 */

import { PROCESS_TRANSPORTS, transportsLaunching } from "../../primitives/registry.ts";
import { lineChart, pct, round, type StudyContext, type StudyResult } from "./study.ts";

/** Ranks as threads (the first workers transport) and as processes (the first processes one). */
const TRANSPORTS = [transportsLaunching("workers")[0], PROCESS_TRANSPORTS[0]];

export async function speedup(ctx: StudyContext): Promise<StudyResult> {
  const notes: string[] = [];
  for (const transport of TRANSPORTS) {
    const times: [number, number][] = [];
    for (const procs of [1, 2, 4, 8]) {
      const s = await ctx.train(
        { transport, procs: String(procs) },
        `${transport}, ${procs} ranks`,
      );
      times.push([procs, s.train_s]);
      const t1 = times[0][1], sp = t1 / s.train_s;
      ctx.record({
        transport,
        launch: transport === TRANSPORTS[0] ? "threads (workers)" : "processes",
        procs,
        time_s: round(s.train_s, 2),
        speedup: round(sp, 2),
        efficiency: round(sp / procs, 2),
        karp_flatt: procs > 1 ? round((1 / sp - 1 / procs) / (1 - 1 / procs), 3) : "",
        test_acc_pct: pct(s.final_test_acc),
      });
    }
    // Amdahl: T(p)/T1 = f + (1 − f)/p, least squares in f over p > 1.
    const t1 = times[0][1];
    const fit = times.slice(1).map(([p, t]) => [1 - 1 / p, t / t1 - 1 / p]);
    const f = fit.reduce((s, [x, y]) => s + x * y, 0) / fit.reduce((s, [x]) => s + x * x, 0);
    notes.push(
      `${transport}: Amdahl fit serial fraction ${round(f, 3)} (max speedup ${
        f > 0 ? round(1 / f, 1) : "∞"
      }×)`,
    );
  }
  return {
    notes,
    chart: (rows) => lineChart(rows, "procs", "speedup", "transport", "ranks", "speedup T1/Tp"),
  };
}
