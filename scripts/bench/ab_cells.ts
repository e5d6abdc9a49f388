/**
 * Before/after cells as alternating pairs: runs one benchmark task in two checkouts of dccl, or
 * in one with two sets of flags, one after the other, `--pairs` times, and prints each size's
 * median time and Gb/s in both with their ratio (after / before by Gb/s, > 1: faster after), as
 * docs/measuring.md asks of a cell that moved more than noise. Sizes are matched by bytes, so
 * dtypes compare at equal bytes. Run from this checkout:
 *
 *   deno run -A scripts/bench/ab_cells.ts --before ../base --after . --pairs 10 -- \
 *     allreduce --procs 2 --transport shm --min 1 --max 4M --out-of-place-only
 *   deno run -A scripts/bench/ab_cells.ts --before-flags "--dtype f32" \
 *     --after-flags "--dtype bf16" -- allreduce --procs 2 --transport shm --min 64K --max 4M
 * @module
 */

import { parse } from "csv-parse/sync";

const args = Deno.args;
const split = args.indexOf("--");
const own = split < 0 ? args : args.slice(0, split), task = split < 0 ? [] : args.slice(split + 1);
const option = (name: string, fallback?: string) => {
  const i = own.indexOf(`--${name}`);
  const value = i < 0 ? fallback : own[i + 1];
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
};
/** A side of the pairs: the checkout it runs in and the flags it adds to the task. */
interface Side {
  dir: string;
  flags: string[];
}
const sideOf = (name: "before" | "after"): Side => ({
  dir: option(name, "."),
  flags: option(`${name}-flags`, "").split(" ").filter((f) => f !== ""),
});
const sides = { before: sideOf("before"), after: sideOf("after") };
const pairs = Number(option("pairs", "10"));
if (task.length === 0 || !(pairs >= 1)) {
  console.error(
    "usage: ab_cells.ts [--before DIR] [--after DIR] [--before-flags F] [--after-flags F] " +
      "[--pairs N] -- <task> <flags>",
  );
  Deno.exit(2);
}

/** One run of the task on one side: time and Gb/s per size in bytes. */
async function once({ dir, flags }: Side): Promise<Map<number, [number, number]>> {
  const csv = await Deno.makeTempFile({ suffix: ".csv" });
  try {
    const { success, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", ...task, ...flags, "--csv", csv],
      cwd: dir,
      stdout: "null",
    }).output();
    if (!success) throw new Error(`${dir}: ${new TextDecoder().decode(stderr).trim()}`);
    const rows = parse(await Deno.readTextFile(csv), { columns: true }) as Record<string, string>[];
    return new Map(
      rows.map((r) => [Number(r.bytes), [Number(r.time_us), Number(r.gbps)]]),
    );
  } finally {
    await Deno.remove(csv).catch(() => {});
    await Deno.remove(csv.replace(/\.csv$/, ".json")).catch(() => {});
  }
}

const median = (v: number[]) => v.toSorted((a, b) => a - b)[Math.floor((v.length - 1) / 2)];
const runs = {
  before: [] as Map<number, [number, number]>[],
  after: [] as Map<number, [number, number]>[],
};
for (let p = 0; p < pairs; p++) {
  // Alternate which goes first, so a drift of the machine falls on both alike.
  const order = p % 2 === 0 ? ["before", "after"] as const : ["after", "before"] as const;
  for (const side of order) runs[side].push(await once(sides[side]));
}
const named = ({ dir, flags }: Side) => [dir, ...flags].join(" ");
console.log(
  `# ${task.join(" ")}: ${pairs} alternating pairs, medians; ratio = after ` +
    `(${named(sides.after)}) / before (${named(sides.before)})`,
);
console.log("bytes        before_us  after_us  before_Gb/s  after_Gb/s  ratio");
for (const bytes of runs.before[0].keys()) {
  const at = (side: "before" | "after", i: 0 | 1) =>
    median(runs[side].map((m) => m.get(bytes)![i]));
  const [bt, at_, bg, ag] = [at("before", 0), at("after", 0), at("before", 1), at("after", 1)];
  console.log(
    `${String(bytes).padEnd(12)} ${bt.toFixed(2).padStart(9)} ${at_.toFixed(2).padStart(9)} ` +
      `${bg.toFixed(2).padStart(12)} ${ag.toFixed(2).padStart(11)}  ${(ag / bg).toFixed(2)}x`,
  );
}
