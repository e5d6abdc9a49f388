/**
 * dccl in a Chromium tab beside dccl on Deno, in one run on this machine (docs/browser.md): the
 * same sweeps through `deno task <primitive>` and `deno task browser <primitive>` one after the
 * other (shm and worker; allreduce, bcast and reduce at 2 and 4 ranks, from 2^16 floats), the
 * allreduce of 1000 floats among 8 workers of the tab, the device allreduce split into upload,
 * kernel and readback in the tab (SwiftShader) and in Deno (its adapter), and one epoch of the
 * trainer on 2 workers in both. Writes every CSV and JSON into the folder given, and prints the
 * tables docs/results keeps.
 *
 *     deno run -A scripts/browser/browser_vs_deno.ts OUT_DIR
 * @module
 */

import { parse } from "csv-parse/sync";
import { type GpuSplit, gpuSplit } from "../../bench/gpu_split.ts";
import { GpuDevice } from "../../internal.ts";
import { withTab } from "./tab_run.ts";
import { TRANSPORT_TABLE } from "../../deno/mod.ts";

const out = Deno.args[0];
if (!out) {
  console.error("usage: deno run -A scripts/browser/browser_vs_deno.ts OUT_DIR");
  Deno.exit(2);
}
await Deno.mkdir(out, { recursive: true });
const ROOT = new URL("../../", import.meta.url);

/** Runs `deno task <args>` here; its stdout. */
async function task(args: string[]): Promise<string> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", ...args],
    cwd: ROOT,
  }).output();
  if (!success) throw new Error(`deno task ${args.join(" ")}: ${new TextDecoder().decode(stderr)}`);
  return new TextDecoder().decode(stdout);
}

/** Gb/s by count of a CSV. */
async function gbps(path: string): Promise<Map<number, number>> {
  const rows = parse(await Deno.readTextFile(path), { columns: true }) as Record<string, string>[];
  if (rows.some((r) => r.wrong !== "0")) throw new Error(`${path}: wrong elements`);
  return new Map(rows.map((r) => [Number(r.count), Number(r.gbps)]));
}

const lines: string[] = [];
const say = (line: string) => {
  console.log(line);
  lines.push(line);
};

// 1. The same sweeps, Deno then Chromium (then the next combination, Chromium first).
say("## Chromium against Deno (Gb/s; ratio = Chromium / Deno)\n");
say("| transport | primitive | ranks | floats | Deno | Chromium | ratio |");
say("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
let turn = 0;
const WORKERS = TRANSPORT_TABLE.launching("workers");
for (const transport of WORKERS) {
  for (const primitive of ["allreduce", "bcast", "reduce"]) {
    for (const procs of ["2", "4"]) {
      const flags = [primitive, "--procs", procs, "--transport", transport, "--min", "64K"];
      const more = ["--max", "16M", "--out-of-place-only"];
      const name = `${transport}_${primitive}_${procs}`;
      const runs = [
        () => task([...flags, ...more, "--csv", `${out}/deno_${name}.csv`]),
        () => task(["browser", ...flags, ...more, "--csv", `${out}/chromium_${name}.csv`]),
      ];
      for (const run of turn++ % 2 === 0 ? runs : runs.toReversed()) await run();
      const [deno, tab] = await Promise.all([
        gbps(`${out}/deno_${name}.csv`),
        gbps(`${out}/chromium_${name}.csv`),
      ]);
      for (const [count, d] of deno) {
        const c = tab.get(count)!;
        say(
          `| ${transport} | ${primitive} | ${procs} | ${count} | ${d.toFixed(2)} | ${
            c.toFixed(2)
          } | ${(c / d).toFixed(2)}× |`,
        );
      }
    }
  }
}

// 2. mpi.js's anchor: 1000 floats among 8 workers, about 0.03 Gb/s (2 ms).
say("\n## 1000 floats among 8 workers of the tab (mpi.js: ~0.03 Gb/s, ~2 ms)\n");
say("| transport | time (µs) | Gb/s | × mpi.js |");
say("| --- | ---: | ---: | ---: |");
for (const transport of WORKERS) {
  const csv = `${out}/chromium_anchor_${transport}.csv`;
  await task([
    "browser",
    "allreduce",
    "--procs",
    "8",
    "--transport",
    transport,
    "--min",
    "1000",
    "--max",
    "1000",
    "--out-of-place-only",
    "--csv",
    csv,
  ]);
  const [row] = parse(await Deno.readTextFile(csv), { columns: true }) as Record<string, string>[];
  say(
    `| ${transport} | ${Number(row.time_us).toFixed(1)} | ${Number(row.gbps).toFixed(2)} | ${
      (Number(row.gbps) / 0.03).toFixed(0)
    }× |`,
  );
}

// 3. The device allreduce split, in the tab and in Deno.
const COUNTS = [2 ** 10, 2 ** 16, 2 ** 20], RANKS = 2;
const tabSplits = await withTab((page) =>
  page.evaluate<GpuSplit[]>(`dccl.gpuSplits(${JSON.stringify(COUNTS)}, ${RANKS})`, 600_000)
);
const gpu = await GpuDevice.open();
const denoSplits: GpuSplit[] = [];
for (const count of COUNTS) denoSplits.push(await gpuSplit(gpu, { count, ranks: RANKS }));
gpu.destroy();
await Deno.writeTextFile(
  `${out}/gpu_split.json`,
  JSON.stringify({ chromium: tabSplits, deno: denoSplits, adapter: gpu.info }, null, 1),
);
say(
  `\n## Device allreduce of 2 logical ranks, split (µs; Chromium: SwiftShader, Deno: ${gpu.info.description})\n`,
);
say("| runtime | floats | upload | kernel | readback | idle completion |");
say("| --- | ---: | ---: | ---: | ---: | ---: |");
for (const [runtime, splits] of [["Chromium", tabSplits], ["Deno", denoSplits]] as const) {
  for (const s of splits) {
    say(
      `| ${runtime} | ${s.count} | ${s.upload_us.toFixed(0)} | ${s.kernel_us.toFixed(0)} | ${
        s.readback_us.toFixed(0)
      } | ${s.floor_us.toFixed(0)} |`,
    );
  }
}

// 4. The trainer: one epoch on 2 workers, the same flags.
say("\n## The trainer: 2 workers on shm, 1 epoch, the same flags\n");
say("| runtime | time (s) | test accuracy |");
say("| --- | ---: | ---: |");
for (const [runtime, prefix] of [["Deno", []], ["Chromium", ["browser"]]] as const) {
  const json = `${out}/train_${runtime.toLowerCase()}.json`;
  await task([...prefix, "train", "--procs", "2", "--epochs", "1", "--json", json]);
  const { summary } = JSON.parse(await Deno.readTextFile(json));
  say(
    `| ${runtime} | ${summary.train_s.toFixed(2)} | ${
      (100 * summary.final_test_acc).toFixed(2)
    }% |`,
  );
}
await Deno.writeTextFile(`${out}/tables.md`, lines.join("\n") + "\n");
