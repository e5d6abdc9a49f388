/**
 * The machine's limits as a table of text: each floor and ceiling with its spread and the
 * transports it bounds, then the bandwidths by size. `deno task limits` prints it; the page
 * shows the tab's.
 * @module
 */

import type { Sampled } from "./measure.ts";
import type { MachineLimits } from "./machine_limits.ts";

const spread = (m: Sampled, digits: number) => `${m.min.toFixed(digits)}–${m.max.toFixed(digits)}`;

/** The limits as lines of text (no trailing newline). */
export function limitsTable(l: MachineLimits): string {
  const rows: [string, Sampled | undefined, string, number, string][] = [
    ["cache-line round trip, 2 workers", l.cacheLineRoundTripUs, "µs", 3, "floor of shm"],
    ["postMessage round trip, 2 workers", l.postMessageRoundTripUs, "µs", 2, "floor of worker"],
    ["loopback round trip, socket calls", l.socketRoundTripUs, "µs", 2, "floor of tcp, ws"],
    ["loopback round trip, Deno's TCP", l.tcpRoundTripUs, "µs", 2, "… ranks above cores"],
    ["loopback TCP stream, 1 connection", l.loopbackStreamGBs, "GB/s", 2, "ceiling of tcp, ws"],
    [`SIMD peak, 1 thread (${l.simdPeak.build})`, l.simdPeak.gflops, "GFLOP/s", 1, "trainer"],
    ["device copy", l.device?.copyGBs, "GB/s", 1, "ceiling of gpu"],
    ["device submit round trip", l.device?.roundTripUs, "µs", 0, "floor of gpu"],
  ];
  const window = l.copy.window;
  const lines = [
    `# ${l.machine.cpu}, ${l.machine.cores} cores, ${l.machine.runtime} ${l.machine.version}`,
    `# measured ${l.date} (machine ${l.fingerprint}); median of the trials, spread min–max`,
    `${"limit".padEnd(38)}${"median".padStart(10)} ${"unit".padEnd(8)}${
      "spread".padStart(16)
    }  bounds`,
  ];
  for (const [name, m, unit, digits, bounds] of rows) {
    if (!m) continue;
    lines.push(
      `${name.padEnd(38)}${m.median.toFixed(digits).padStart(10)} ${unit.padEnd(8)}` +
        `${spread(m, digits).padStart(16)}  ${bounds}`,
    );
  }
  if (!l.device) lines.push(`${"device".padEnd(38)}${"-".padStart(10)} (no adapter)`);
  lines.push(
    "",
    "# memory bandwidth, GB/s of output (copy: memory.copy; reduce: SIMD add, read two, write one; " +
      "window: one core's copy into W blocks in turn, a stream's receives); " +
      "ceiling of shm's and worker's busbw",
    `${"bytes".padStart(10)}${
      [`copy 1`, `copy ${l.machine.cores}`, `reduce 1`, `reduce ${l.machine.cores}`]
        .map((h) => h.padStart(10)).join("")
    }${window ? `window W${window.blocks}`.padStart(13) : ""}`,
  );
  l.copy.one.bytes.forEach((bytes, i) => {
    const cell = (m?: Sampled, width = 10) => (m ? m.median.toFixed(2) : "-").padStart(width);
    const windowed = window && cell(window.gbs[window.bytes.indexOf(bytes)], 13);
    lines.push(
      `${String(bytes).padStart(10)}${cell(l.copy.one.gbs[i])}${cell(l.copy.all.gbs[i])}` +
        `${cell(l.reduce.one.gbs[i])}${cell(l.reduce.all.gbs[i])}${windowed || ""}`,
    );
  });
  return lines.join("\n");
}
