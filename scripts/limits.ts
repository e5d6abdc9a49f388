/**
 * `deno task limits [--refresh] [--json FILE]`: this machine's floors and ceilings — the round
 * trips no handoff can beat and the bandwidths no transfer can — measured once and kept per
 * machine (deno/bench/limits/this_machine.ts), then printed; every later run reads its rows
 * against them (docs/measuring.md, "The machine's limits").
 * @module
 */

import { limitsTable } from "../bench/limits/limits_table.ts";
import {
  keepLimits,
  keptLimits,
  limitsPath,
  measureLimits,
} from "../deno/bench/limits/this_machine.ts";
import { writeAtomically } from "../deno/files/atomic_file.ts";
import { type FlagSpec, writableFile } from "./_flags.ts";
import { type Task, taskMain } from "./_task.ts";

const FLAGS: Record<string, FlagSpec> = {
  refresh: { help: "measure again, though this machine's limits are kept", boolean: true },
  json: { help: "also write the limits to this JSON file", path: true },
};

interface LimitsPlan {
  refresh: boolean;
  json?: string;
}

const LIMITS: Task<LimitsPlan> = {
  name: "limits",
  summary: "Measures this machine's limits (round trips, bandwidths, SIMD peak) and keeps them.",
  flags: FLAGS,
  plan: (v) => ({
    refresh: v.refresh === "true",
    json: v.json === undefined ? undefined : writableFile("json", v.json),
  }),
  async run(plan, signal) {
    let limits = plan.refresh ? undefined : keptLimits();
    if (limits) {
      console.error(
        `dccl limits: kept from ${limits.date} at ${limitsPath()} (--refresh measures again)`,
      );
    } else {
      limits = await measureLimits((what) => {
        signal.throwIfAborted();
        console.error(`dccl limits: measuring ${what}…`);
      });
      signal.throwIfAborted();
      console.error(`dccl limits: kept at ${keepLimits(limits)}`);
    }
    if (plan.json) writeAtomically(plan.json, JSON.stringify(limits, null, 1));
    console.log(limitsTable(limits));
    return 0;
  },
};

Deno.exit(await taskMain(LIMITS, Deno.args));
