/**
 * `deno task limits [--refresh] [--keep-busy] [--json FILE]`: this machine's floors and ceilings —
 * the round trips no handoff can beat and the bandwidths no transfer can — measured once and kept
 * per machine (scripts/limits/this_machine.ts), then printed; every later run reads its rows
 * against them (docs/measuring.md, "The machine's limits"). A sitting on a busy machine is printed
 * but not kept unless told; the table is printed before anything is kept, so a cache folder that
 * cannot be written loses nothing measured.
 * @module
 */

import { limitsTable } from "../bench/limits/limits_table.ts";
import type { MachineLimits } from "../bench/limits/machine_limits.ts";
import {
  keepLimits,
  keptLimits,
  LimitsFileError,
  limitsPath,
  measureLimits,
} from "./limits/this_machine.ts";
import { ioReason, writeAtomically } from "../deno/mod.ts";
import { defineFlags, writableFile } from "./common/flags.ts";
import { type Task, taskMain } from "./common/task.ts";

const FLAGS = defineFlags({
  refresh: { help: "measure again, though this machine's limits are kept", kind: "switch" },
  "keep-busy": {
    help: "keep a sitting measured while the machine was busy (marked so)",
    kind: "switch",
  },
  json: { help: "also write the limits to this JSON file", path: true },
});

interface LimitsPlan {
  refresh: boolean;
  keepBusy: boolean;
  json?: string;
}

const LIMITS: Task<LimitsPlan, typeof FLAGS> = {
  name: "limits",
  summary: "Measures this machine's limits (round trips, bandwidths, SIMD peak) and keeps them.",
  flags: FLAGS,
  plan: (v) => ({
    refresh: v.refresh,
    keepBusy: v["keep-busy"],
    json: v.json === undefined ? undefined : writableFile("json", v.json),
  }),
  async run(plan, signal) {
    const kept = plan.refresh ? undefined : keptOrRefused();
    if (kept) {
      console.error(
        `dccl limits: kept from ${kept.date} at ${limitsPath()} (--refresh measures again)`,
      );
      if (plan.json) writeAtomically(plan.json, JSON.stringify(kept, null, 1));
      console.log(limitsTable(kept));
      return 0;
    }
    const unkeepable = keepProblem();
    if (unkeepable) {
      console.error(`dccl limits: ${unkeepable}: measuring all the same; the table is printed`);
    }
    const limits = await measureLimits(({ what, where }) => {
      signal.throwIfAborted();
      console.error(`dccl limits: measuring ${what}… (${where})`);
    });
    signal.throwIfAborted();
    console.log(limitsTable(limits));
    if (plan.json) writeAtomically(plan.json, JSON.stringify(limits, null, 1));
    return keep(limits, plan, unkeepable);
  },
};

/** The kept limits, or undefined (none, or a file that does not read: said, then replaced). */
function keptOrRefused(): MachineLimits | undefined {
  try {
    return keptLimits();
  } catch (e) {
    if (!(e instanceof LimitsFileError)) throw e;
    console.error(`dccl limits: ${e.message.split(":")[0]}: measuring again`);
    return undefined;
  }
}

/** Why the limits could not be kept (no cache folder, or one this user cannot write), if so. */
function keepProblem(): string | undefined {
  const path = limitsPath();
  if (!path) return "neither XDG_CACHE_HOME nor HOME is set: nowhere to keep the limits";
  const folder = path.slice(0, path.lastIndexOf("/"));
  try {
    Deno.mkdirSync(folder, { recursive: true });
    const probe = `${folder}/.dccl-write-probe-${crypto.randomUUID()}`;
    Deno.writeFileSync(probe, new Uint8Array(0), { createNew: true });
    Deno.removeSync(probe);
    return undefined;
  } catch (e) {
    return `cannot keep the limits in ${folder} (${ioReason(e)})`;
  }
}

/**
 * Keeps a sitting unless it was busy (and not told to) or cannot be kept; returns the exit code.
 */
function keep(limits: MachineLimits, plan: LimitsPlan, unkeepable: string | undefined): number {
  const sitting = limits.sitting!;
  const others = `others used ${Math.round(100 * Math.max(...sitting.load))}% of the CPUs`;
  if (sitting.busy && !plan.keepBusy) {
    console.error(
      `dccl limits: not kept: the machine was busy while measuring (${others}), so these are ` +
        `not its limits; measure again when it is idle, or --keep-busy keeps them marked busy`,
    );
    return 1;
  }
  if (unkeepable) {
    console.error(`dccl limits: not kept: ${unkeepable}`);
    return 1;
  }
  try {
    const where = keepLimits(limits);
    console.error(
      `dccl limits: kept at ${where}${sitting.busy ? ` (marked busy: ${others})` : ""}`,
    );
    return 0;
  } catch (e) {
    console.error(`dccl limits: not kept: ${(e as Error).message}`);
    return 1;
  }
}

Deno.exit(await taskMain(LIMITS, Deno.args));
