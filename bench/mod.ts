/**
 * dccl's measuring harness, for programs that measure their own primitives or read what dccl
 * measured (nccl-tests' one harness): every primitive described once with exact inputs and
 * checks, the sweep each rank runs, its rows, CSV and table, and `compare`'s readers, crossovers
 * and Vega-Lite chart. Runtime-neutral: a browser tab runs it as Deno does.
 *
 * @example nccl-tests' metrics of a measured allreduce: 2 ranks, 100 iterations of 4 MiB
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { metrics, PRIMITIVES } from "./mod.ts";
 *
 * const m = metrics({
 *   rankTotalsUs: [1000, 1100], // each rank's time for all 100 iterations
 *   iters: 100,
 *   bytes: 4 << 20,
 *   busFactor: PRIMITIVES.allreduce.busFactor(2),
 * });
 * assertEquals([m.time_us, m.algbw_gbs.toFixed(1)], [10.5, "399.5"]);
 * ```
 * @module
 */

export {
  type CaseOptions,
  DEFAULT_WINDOW,
  type Flow,
  type NonBlockingName,
  type PointToPointName,
  type PreparedCase,
  type Primitive,
  PRIMITIVES,
  type PrimitiveSpec,
  type SizedCase,
  type Traffic,
} from "./cases.ts";
export {
  measureSweep,
  type SizeResult,
  type SweepOptions,
  type Timing,
  TIMINGS,
} from "./harness.ts";
export { type HarnessArgs, type HarnessSummary, runSweep } from "./sweep_rank.ts";
export {
  CSV_COLUMNS,
  type Measured,
  metrics,
  P999_MIN_SAMPLES,
  percentiles,
  type ResultRow,
} from "./metrics.ts";
export {
  CSV_HEADER,
  csvValues,
  type HalfKernels,
  type OsuOptions,
  type ReportOptions,
  type RunMetadata,
  sidecar,
  sizeName,
  type SweepSink,
  type TableLayout,
  tableLayout,
} from "./report_format.ts";
export {
  type Point,
  pointBy,
  readResults,
  type ResultFile,
  ResultFormatError,
  TIME_METRICS,
  type TimeMetric,
} from "./compare/results.ts";
export {
  type Crossover,
  type CrossoverOptions,
  crossovers,
  type Curve,
  type CurveSet,
  formatCrossovers,
  toCurves,
  type WrongResults,
} from "./compare/crossover.ts";
export { type ChartOptions, htmlPage, renderSvg } from "./compare/chart.ts";
export {
  limitLines,
  type MachineFacts,
  type MachineLimits,
  pctOfLimit,
  type RunBounds,
  runBounds,
  type RunShape,
  type Sitting,
  sweepBounds,
} from "./limits/machine_limits.ts";
export { limitsTable } from "./limits/limits_table.ts";
export { type Sampled, summarize } from "./limits/measure.ts";
export {
  type BandwidthCurve,
  type BandwidthOptions,
  cacheLineRoundTrip,
  type DeviceLimits,
  deviceLimits,
  memoryBandwidth,
  postMessageRoundTrip,
  type ProbeOptions,
  simdPeak,
  windowCopy,
  type WindowCurve,
} from "./limits/probes.ts";
