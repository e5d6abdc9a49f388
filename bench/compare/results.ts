/**
 * Reads measured curves from the files users bring to `compare`: dccl CSVs (and their JSON
 * sidecars), OSU micro-benchmark text output, and nccl-tests text output. Everything becomes
 * {@linkcode Point}s: one size of one curve, with time per op and payload Gb/s.
 * @module
 */

import { parse } from "csv-parse/sync";
import { CSV_COLUMNS } from "../metrics.ts";

/** One measured size of one curve. */
export interface Point {
  /** File the point came from (its base name). */
  source: string;
  primitive: string;
  procs: number;
  transport: string;
  memory: string;
  algorithm: string;
  floats: number;
  time_us: number;
  gbps: number;
}

/** A file `compare` cannot read: one line saying which and why. */
export class ResultFormatError extends Error {
  override name = "ResultFormatError";
}

/** Reads one file, recognising its format from its content. */
export function readResults(path: string, text: string, defaultProcs = 2): Point[] {
  const source = path.split("/").at(-1)!;
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{")) return readDcclJson(source, trimmed);
  if (/^primitive,transport,/.test(trimmed)) return readDcclCsv(source, trimmed);
  if (/^#\s*OSU\b/im.test(trimmed)) return readOsu(source, trimmed, defaultProcs);
  if (/#\s+size\s+count\s+type\s+redop/i.test(trimmed)) return readNcclTests(source, trimmed);
  throw new ResultFormatError(
    `${path}: not a dccl CSV/JSON, OSU micro-benchmark output or nccl-tests output`,
  );
}

function readDcclCsv(source: string, text: string): Point[] {
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { columns: true, skip_empty_lines: true });
  } catch (e) {
    throw new ResultFormatError(`${source}: broken CSV (${(e as Error).message.split("\n")[0]})`);
  }
  const missing = CSV_COLUMNS.filter((c) => rows.length > 0 && !(c in rows[0]));
  if (missing.length > 0) {
    throw new ResultFormatError(`${source}: CSV lacks columns ${missing.join(", ")}`);
  }
  return rows.map((r) => dcclPoint(source, r));
}

function readDcclJson(source: string, text: string): Point[] {
  let doc: { rows?: Record<string, unknown>[] };
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ResultFormatError(`${source}: broken JSON (${(e as Error).message.split("\n")[0]})`);
  }
  if (!Array.isArray(doc.rows)) throw new ResultFormatError(`${source}: JSON has no rows array`);
  return doc.rows.map((r) => dcclPoint(source, r));
}

function dcclPoint(source: string, r: Record<string, unknown>): Point {
  const point = {
    source,
    primitive: String(r.primitive),
    procs: Number(r.procs),
    transport: String(r.transport),
    memory: String(r.memory),
    algorithm: String(r.algorithm),
    floats: Number(r.floats),
    time_us: Number(r.time_us),
    gbps: Number(r.gbps),
  };
  if (![point.procs, point.floats, point.time_us, point.gbps].every(Number.isFinite)) {
    throw new ResultFormatError(`${source}: a row has non-numeric procs, floats, time_us or gbps`);
  }
  return checked(point);
}

/** `p` if its numbers can be a measurement: at least one rank, sizes ≥ 0, times and rates > 0. */
function checked(p: Point): Point {
  const problem = !Number.isInteger(p.procs) || p.procs < 1
    ? `procs ${p.procs} (expected an integer ≥ 1)`
    : !Number.isInteger(p.floats) || p.floats < 0
    ? `floats ${p.floats} (expected an integer ≥ 0)`
    : !(p.time_us > 0)
    ? `time_us ${p.time_us} (expected > 0)`
    : !(p.gbps >= 0)
    ? `bandwidth ${p.gbps} Gb/s (expected ≥ 0)`
    : undefined;
  if (problem) {
    throw new ResultFormatError(
      `${p.source}: the ${p.primitive} row at ${p.floats} floats has ${problem}`,
    );
  }
  return p;
}

/** OSU test titles → dccl primitive names. */
const OSU_TESTS: [RegExp, string][] = [
  [/allreduce/i, "allreduce"],
  [/reduce[_ -]?scatter/i, "reduce_scatter"],
  [/allgather/i, "allgather"],
  [/broadcast|bcast/i, "bcast"],
  [/reduce/i, "reduce"],
  [/latency|bandwidth|bw/i, "sendrecv"],
];

/**
 * OSU output: `# OSU MPI Allreduce Latency Test v7.x`, then `size  avg-latency(us) [min max
 * iterations]` rows (sizes in bytes), or `size  MB/s` rows for the bandwidth tests.
 */
function readOsu(source: string, text: string, procs: number): Point[] {
  const title = text.match(/^#\s*(OSU[^\n]*)$/im)![1];
  const primitive = OSU_TESTS.find(([re]) => re.test(title.replace(/^OSU\s+\S+/, "")))?.[1];
  if (!primitive) throw new ResultFormatError(`${source}: unknown OSU test "${title}"`);
  const bandwidth = /MB\/s/i.test(text.match(/^#\s*Size.*$/im)?.[0] ?? "");
  const points: Point[] = [];
  for (const line of text.split("\n")) {
    const cells = line.trim().split(/\s+/);
    if (line.trim().startsWith("#") || cells.length < 2 || !/^\d+$/.test(cells[0])) continue;
    const bytes = Number(cells[0]), value = Number(cells[1]);
    if (!Number.isFinite(value) || bytes === 0) continue;
    // Bandwidth tests report MB/s (1e6 bytes); latency tests report µs per operation.
    const time_us = bandwidth ? bytes / value : value;
    points.push(checked({
      source,
      primitive,
      procs,
      transport: "mpi",
      memory: "host",
      algorithm: "",
      floats: bytes / 4,
      time_us,
      gbps: (bytes * 8) / time_us / 1e3,
    }));
  }
  if (points.length === 0) throw new ResultFormatError(`${source}: OSU output without data rows`);
  return points;
}

/** nccl-tests binaries → dccl primitive names (the output itself does not say which ran). */
const NCCL_TESTS: [RegExp, string][] = [
  [/all_?reduce/i, "allreduce"],
  [/reduce_?scatter/i, "reduce_scatter"],
  [/all_?gather/i, "allgather"],
  [/broadcast|bcast/i, "bcast"],
  [/sendrecv/i, "sendrecv"],
  [/reduce/i, "reduce"],
];

/**
 * nccl-tests output: a `#  Rank  n …` line per rank and rows of `size count type redop root
 * time algbw busbw #wrong` (out-of-place, then in-place); the out-of-place time is used.
 */
function readNcclTests(source: string, text: string): Point[] {
  const named = text.match(/^#.*\b(\w+_perf)\b/m)?.[1] ?? source;
  const primitive = NCCL_TESTS.find(([re]) => re.test(named))?.[1];
  if (!primitive) {
    throw new ResultFormatError(
      `${source}: cannot tell which nccl-tests binary wrote this; name the file after it ` +
        `(e.g. all_reduce_perf.txt)`,
    );
  }
  const procs = Math.max(1, (text.match(/^#\s+Rank\s+\d+/gm) ?? []).length);
  const points: Point[] = [];
  for (const line of text.split("\n")) {
    const c = line.trim().split(/\s+/);
    if (line.trim().startsWith("#") || c.length < 9 || !/^\d+$/.test(c[0])) continue;
    const bytes = Number(c[0]), count = Number(c[1]), time_us = Number(c[5]);
    if (!(bytes > 0) || !(time_us > 0)) continue;
    points.push({
      source,
      primitive,
      procs,
      transport: "nccl",
      memory: "gpu",
      algorithm: "",
      floats: c[2] === "float" ? count : bytes / 4,
      time_us,
      gbps: (bytes * 8) / time_us / 1e3,
    });
  }
  if (points.length === 0) throw new ResultFormatError(`${source}: nccl-tests output without rows`);
  return points;
}
