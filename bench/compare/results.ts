/**
 * Reads measured curves from the files users bring to `compare`: dccl CSVs (and their JSON
 * sidecars), OSU micro-benchmark text output, and nccl-tests text output. Everything becomes
 * {@linkcode Point}s: one size of one curve, with time per op, payload Gb/s and wrong elements.
 * Files are read as streams, a point at a time, so a file of millions of rows takes little memory
 * (a JSON sidecar, which holds one run, is read whole). A file is anything with a name and a
 * stream of its bytes: a `File` a page was handed, or a file on disk (deno/files/result_files.ts).
 * @module
 */

import { csvRecords } from "./csv_records.ts";
import { CSV_COLUMNS, type ResultRow } from "../metrics.ts";

/** One measured size of one curve. */
export interface Point {
  /** File the point came from (its base name). */
  source: string;
  /** The primitive measured. */
  primitive: string;
  /** Ranks it ran on. */
  procs: number;
  /** Transport (or the tool, for OSU and nccl-tests). */
  transport: string;
  /** Memory kind. */
  memory: string;
  /** Algorithm (or the test's name). */
  algorithm: string;
  /** Ranks per process of a hierarchical group (1 for a one-level group and other tools). */
  threads: number;
  /** Element type as dccl names it (`f32`, `f16`, `bf16`, …); empty where the tool does not say. */
  type: string;
  /**
   * Size in 4-byte floats (bytes / 4, a fraction where another tool measured bytes): every
   * reader's unit, so curves of other element types and other tools line up at equal bytes.
   */
  floats: number;
  /** Time per operation, µs. */
  time_us: number;
  /** Payload Gb/s. */
  gbps: number;
  /** Elements that differed from the exact result (0 where the tool does not say). */
  wrong: number;
  /** The share of the machine's limit reached, percent (dccl rows read against `deno task limits`). */
  pct_limit?: number;
  /** dccl rows' other times per operation (best case and percentiles), µs, where the row has them. */
  times?: Partial<Record<TimeMetric, number>>;
}

/** The times a dccl row carries besides its mean: `compare --metric` plots any of them. */
export const TIME_METRICS = [
  "time_us",
  "best_us",
  "p50_us",
  "p90_us",
  "p99_us",
  "p999_us",
] as const;

/** One of {@linkcode TIME_METRICS}. */
export type TimeMetric = typeof TIME_METRICS[number];

/**
 * `p` with `metric` as its time (its Gb/s following, every stream's as before), or undefined
 * where its row does not carry that time (other tools' output, a p99.9 under a thousand samples).
 */
export function pointBy(p: Point, metric: TimeMetric): Point | undefined {
  if (metric === "time_us") return p;
  const us = p.times?.[metric];
  return us === undefined || !(us > 0)
    ? undefined
    : { ...p, time_us: us, gbps: p.gbps * p.time_us / us };
}

/** A file `compare` cannot read: one line saying which and why. */
export class ResultFormatError extends Error {
  /** Always `ResultFormatError`. */
  override name = "ResultFormatError";
}

/** Bytes read to tell a file's format. */
const SNIFF_BYTES = 64 * 1024;

/** The formats `compare` reads, told apart by a file's first bytes. */
type Format = "json" | "csv" | "sweep-index" | "osu" | "nccl-tests";

/** A file of results: its name (a path, or what a page was handed) and its bytes. */
export interface ResultFile {
  /** A path, or the name a page was handed. */
  readonly name: string;
  /** The file's bytes, from the start. */
  stream(): ReadableStream<Uint8Array<ArrayBuffer>>;
}

/**
 * Reads one file's points, recognising its format from its first bytes. A sweep's `index.csv`
 * holds no points (it lists the sweep's files) and yields none. `defaultProcs` is the ranks of
 * OSU collective output, which does not say them (NaN: leave them NaN, for the caller to decide).
 */
export async function* readResults(file: ResultFile, defaultProcs?: number): AsyncGenerator<Point> {
  defaultProcs ??= 2;
  const path = file.name;
  const source = path.split("/").at(-1)!;
  // One stream, its first bytes looked at and then read again: a pipe can be read once.
  const { head, bytes } = await sniffed(file.stream());
  let format: Format;
  try {
    format = formatOf(path, head);
  } catch (e) {
    await bytes.cancel();
    throw e;
  }
  if (format === "sweep-index") return void await bytes.cancel();
  if (format === "json") {
    yield* readDcclJson(source, await new Response(bytes).text());
    return;
  }
  if (format === "csv") return yield* readDcclCsv(source, bytes);
  const text = lines(bytes.pipeThrough(new TextDecoderStream()));
  if (format === "osu") yield* readOsu(source, text, defaultProcs);
  else yield* readNcclTests(source, text);
}

/**
 * The first bytes of `stream` (up to {@linkcode SNIFF_BYTES}) as text, and a stream of all its
 * bytes from the start: those read first, then the rest.
 */
async function sniffed(
  stream: ReadableStream<Uint8Array<ArrayBuffer>>,
): Promise<{ head: string; bytes: ReadableStream<Uint8Array<ArrayBuffer>> }> {
  const reader = stream.getReader();
  const first: Uint8Array<ArrayBuffer>[] = [];
  let n = 0, ended = false;
  while (n < SNIFF_BYTES && !ended) {
    const { value, done } = await reader.read();
    if (value) first.push(value), n += value.byteLength;
    ended = done;
  }
  const joined = new Uint8Array(n);
  first.reduce((at, chunk) => (joined.set(chunk, at), at + chunk.byteLength), 0);
  const head = new TextDecoder().decode(joined.subarray(0, SNIFF_BYTES));
  const bytes = new ReadableStream<Uint8Array<ArrayBuffer>>({
    async pull(controller) {
      const next = first.shift() ?? (ended ? undefined : (await reader.read()).value);
      if (next) controller.enqueue(next);
      else controller.close();
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return { head, bytes };
}

function formatOf(path: string, start: string): Format {
  const trimmed = start.trimStart();
  if (trimmed.startsWith("{")) return "json";
  if (/^primitive,transport,memory,procs,status,/.test(trimmed)) return "sweep-index";
  if (/^primitive,transport,/.test(trimmed)) return "csv";
  if (/^#\s*OSU\b/im.test(trimmed)) return "osu";
  if (/#\s+size\s+count\s+type\s+redop/i.test(trimmed)) return "nccl-tests";
  throw new ResultFormatError(
    `${path}: not a dccl CSV/JSON, OSU micro-benchmark output or nccl-tests output`,
  );
}

/** The lines of a text stream (without their line ends). */
async function* lines(text: ReadableStream<string>): AsyncGenerator<string> {
  let rest = "";
  for await (const chunk of text) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    yield* parts;
  }
  if (rest) yield rest;
}

async function* readDcclCsv(
  source: string,
  bytes: ReadableStream<Uint8Array<ArrayBuffer>>,
): AsyncGenerator<Point> {
  let first = true;
  try {
    for await (const row of csvRecords(lines(bytes.pipeThrough(new TextDecoderStream())))) {
      if (first) {
        // Older CSVs call the element count `floats`, newer ones `count`.
        const missing = CSV_COLUMNS.filter((c) =>
          !(c in row) && !(c === "count" && "floats" in row)
        );
        if (missing.length > 0) {
          throw new ResultFormatError(`${source}: CSV lacks columns ${missing.join(", ")}`);
        }
        first = false;
      }
      yield dcclPoint(source, row);
    }
  } catch (e) {
    if (e instanceof ResultFormatError) throw e;
    throw new ResultFormatError(`${source}: broken CSV (${(e as Error).message.split("\n")[0]})`);
  }
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

/** The point of a row just measured (a page draws its sweep's rows as they come). */
export function pointOfRow(source: string, row: ResultRow): Point {
  return checked({
    source,
    primitive: row.primitive,
    procs: row.procs,
    transport: row.transport,
    memory: row.memory,
    algorithm: row.algorithm,
    threads: row.threads,
    type: row.dtype,
    floats: row.bytes / 4,
    time_us: row.time_us,
    gbps: row.gbps,
    wrong: row.wrong,
    pct_limit: row.pct_limit,
    times: Object.fromEntries(
      TIME_METRICS.filter((m) => row[m] !== undefined).map((m) => [m, row[m]!]),
    ),
  });
}

/** The point of one dccl row (a CSV row's fields, or a sidecar's row) from `source`. */
function dcclPoint(source: string, r: Record<string, unknown>): Point {
  const point = {
    source,
    primitive: String(r.primitive),
    procs: Number(r.procs),
    transport: String(r.transport),
    memory: String(r.memory),
    algorithm: String(r.algorithm),
    threads: Number(r.threads ?? 1),
    type: String(r.type ?? r.dtype ?? "f32"),
    floats: Number(r.count ?? r.floats),
    time_us: Number(r.time_us),
    gbps: Number(r.gbps),
    wrong: Number(r.wrong ?? 0),
    pct_limit: r.pct_limit === undefined || r.pct_limit === "" ? undefined : Number(r.pct_limit),
    times: Object.fromEntries(
      TIME_METRICS.filter((m) => r[m] !== undefined && r[m] !== "").map((m) => [m, Number(r[m])]),
    ),
  };
  const numbers = [point.procs, point.floats, point.time_us, point.gbps, point.wrong];
  if (!numbers.every(Number.isFinite)) {
    throw new ResultFormatError(
      `${source}: a row has non-numeric procs, count, time_us, gbps or wrong`,
    );
  }
  if (!Number.isInteger(point.floats) || point.floats < 0) {
    throw new ResultFormatError(
      `${source}: the ${point.primitive} row at ${point.floats} has count ${point.floats} ` +
        `(expected an integer ≥ 0)`,
    );
  }
  // At equal bytes with every other curve (an f16 row of 2n elements stands beside f32's n).
  const bytes = Number(r.bytes);
  return checked(Number.isFinite(bytes) ? { ...point, floats: bytes / 4 } : point);
}

/**
 * `p` if its numbers can be a measurement: at least one rank, a size ≥ 0 (a fraction of a float
 * where another tool measured bytes), times and rates > 0.
 */
function checked(p: Point): Point {
  // NaN ranks: a file that does not say them, where the caller asked to be told (readResults).
  const problem = !(Number.isNaN(p.procs) || (Number.isInteger(p.procs) && p.procs >= 1))
    ? `procs ${p.procs} (expected an integer ≥ 1)`
    : !(p.floats >= 0)
    ? `floats ${p.floats} (expected ≥ 0)`
    : !(p.time_us > 0)
    ? `time_us ${p.time_us} (expected > 0)`
    : !(p.gbps >= 0)
    ? `bandwidth ${p.gbps} Gb/s (expected ≥ 0)`
    : !(Number.isInteger(p.wrong) && p.wrong >= 0)
    ? `wrong ${p.wrong} (expected an integer ≥ 0)`
    : undefined;
  if (problem) {
    throw new ResultFormatError(
      `${p.source}: the ${p.primitive} row at ${p.floats} floats has ${problem}`,
    );
  }
  return p;
}

/**
 * OSU test titles → dccl primitive names: each point-to-point test onto dccl's test of the same
 * kind (osu_latency and osu_multi_lat onto `latency`, osu_bw onto `bw` …), never onto the
 * exchange, sendrecv, which no OSU test measures.
 */
const OSU_TESTS: [RegExp, string][] = [
  [/sendrecv/i, "sendrecv"],
  [/non-?blocking\s+allreduce/i, "iallreduce"],
  [/non-?blocking\s+(broadcast|bcast)/i, "ibcast"],
  [/non-?blocking\s+all-?to-?all/i, "ialltoall"],
  [/all-?to-?allv/i, "alltoallv"],
  [/allgatherv/i, "allgatherv"],
  [/gatherv/i, "gatherv"],
  [/scatterv/i, "scatterv"],
  [/all-?to-?all/i, "alltoall"],
  [/allreduce/i, "allreduce"],
  [/reduce[_ -]?scatter/i, "reduce_scatter"],
  [/allgather/i, "allgather"],
  [/broadcast|bcast/i, "bcast"],
  [/reduce/i, "reduce"],
  [/gather/i, "gather"],
  [/scatter/i, "scatter"],
  [/multiple bandwidth|message rate|mbw/i, "mbw_mr"],
  [/bi-?directional bandwidth|bibw/i, "bibw"],
  [/bandwidth|\bbw\b/i, "bw"],
  [/latency/i, "latency"],
];

/** The point-to-point tests, which OSU runs on pairs (2 ranks unless a `pairs:` line says). */
const OSU_POINT_TO_POINT = ["sendrecv", "latency", "bw", "bibw", "mbw_mr"];

/**
 * OSU output: `# OSU MPI Allreduce Latency Test v7.x`, then `size  avg-latency(us) [min max
 * iterations] [Validation]` rows (sizes in bytes), or `size  MB/s [Messages/s]` rows for the
 * bandwidth tests. Point-to-point files are pairs of ranks (osu_mbw_mr's `# [ pairs: N ]`, else
 * one); collective ones do not say, and are taken as `procs`. Rows are read as dccl writes its
 * own: a bandwidth test's time is per message and its bandwidth every stream's together (both
 * ways for osu_bibw, every pair for osu_mbw_mr), a latency test's time is its latency, and a
 * non-blocking test's its pure communication time (as dccl's rows of iallreduce …).
 */
async function* readOsu(
  source: string,
  text: AsyncIterable<string>,
  procs: number,
): AsyncGenerator<Point> {
  let primitive: string | undefined, bandwidth = false, points = 0, pairs = 1, pureColumn = 1;
  for await (const line of text) {
    const trimmed = line.trim();
    const title = trimmed.match(/^#\s*(OSU.*)$/i)?.[1];
    if (title && !primitive) {
      primitive = OSU_TESTS.find(([re]) => re.test(title.replace(/^OSU\s+\S+/, "")))?.[1];
      if (!primitive) throw new ResultFormatError(`${source}: unknown OSU test "${title}"`);
    }
    pairs = Number(trimmed.match(/^#.*\bpairs:\s*(\d+)/i)?.[1] ?? pairs);
    if (/^#\s*Size/i.test(trimmed)) {
      bandwidth = /MB\/s/i.test(trimmed);
      // The non-blocking tests: overall, compute, pure communication, overlap.
      pureColumn = /Pure Comm/i.test(trimmed) ? 3 : 1;
    }
    const cells = trimmed.split(/\s+/);
    if (trimmed.startsWith("#") || cells.length < 2 || !/^\d+$/.test(cells[0])) continue;
    const bytes = Number(cells[0]), value = Number(cells[pureColumn]);
    if (!primitive || !Number.isFinite(value) || bytes === 0) continue;
    const pointToPoint = OSU_POINT_TO_POINT.includes(primitive);
    const streams = primitive === "bibw" ? 2 : primitive === "mbw_mr" ? pairs : 1;
    // MB/s is 1e6 bytes a second; latency tests report µs.
    const time_us = bandwidth ? (streams * bytes) / value : value;
    points++;
    yield checked({
      source,
      primitive,
      procs: pointToPoint ? 2 * pairs : procs,
      transport: "mpi",
      memory: "host",
      threads: 1,
      type: "",
      algorithm: "",
      floats: bytes / 4,
      time_us,
      gbps: bandwidth ? (value * 8) / 1e3 : (bytes * 8) / time_us / 1e3,
      wrong: 0,
    });
  }
  if (points === 0) throw new ResultFormatError(`${source}: OSU output without data rows`);
}

/** nccl-tests' type names → dccl's. */
const NCCL_TYPES: Record<string, string> = {
  float: "f32",
  double: "f64",
  int32: "i32",
  half: "f16",
  bfloat16: "bf16",
};

/** nccl-tests binaries → dccl primitive names (the output itself does not say which ran). */
const NCCL_TESTS: [RegExp, string][] = [
  [/all_?to_?all/i, "alltoall"],
  [/all_?reduce/i, "allreduce"],
  [/reduce_?scatter/i, "reduce_scatter"],
  [/all_?gather/i, "allgather"],
  [/broadcast|bcast/i, "bcast"],
  [/sendrecv/i, "sendrecv"],
  [/reduce/i, "reduce"],
  [/gather/i, "gather"],
  [/scatter/i, "scatter"],
];

/** What dccl's own table says of its run in its first line. */
type DcclHeader = Pick<Point, "primitive" | "procs" | "threads" | "transport" | "memory">;

/**
 * `# dccl allreduce: 4 ranks (2 processes × 2 threads), transport tcp, memory shared` (or
 * `3 logical ranks on 1 device`) → what it names; undefined for any other line.
 */
function dcclHeader(line: string): DcclHeader | undefined {
  const m = line.match(/^#\s*dccl (\w+): (\d+) [^,]*, transport (\w+), memory (\w+)/);
  if (!m) return undefined;
  const [, primitive, procs, transport, memory] = m;
  const threads = Number(line.match(/× (\d+) threads\)/)?.[1] ?? 1);
  return { primitive, procs: Number(procs), threads, transport, memory };
}

/**
 * nccl-tests output (or dccl's table saved as text, read by its header): a `#  Rank  n …` line per rank and rows of `size count type redop root
 * time algbw busbw #wrong` (out-of-place, then in-place); the out-of-place figures are used.
 */
async function* readNcclTests(source: string, text: AsyncIterable<string>): AsyncGenerator<Point> {
  let named: string | undefined, procs = 0, points = 0, dccl: DcclHeader | undefined;
  for await (const line of text) {
    const trimmed = line.trim();
    if (trimmed.startsWith("#")) {
      named ??= trimmed.match(/\b(\w+_perf)\b/)?.[1];
      dccl ??= dcclHeader(trimmed);
      if (/^#\s+Rank\s+\d+/.test(trimmed)) procs++;
      continue;
    }
    const c = trimmed.split(/\s+/);
    if (c.length < 9 || !/^\d+$/.test(c[0])) continue;
    const bytes = Number(c[0]), time_us = Number(c[5]);
    if (!(bytes > 0) || !(time_us > 0)) continue;
    if (dccl) {
      points++;
      yield checked({
        source,
        ...dccl,
        // dccl's table ends each row with the algorithm that ran.
        algorithm: c.length > 13 ? c[c.length - 1] : "",
        type: c[2],
        floats: bytes / 4,
        time_us,
        gbps: (bytes * 8) / time_us / 1e3,
        wrong: Number(c[8]) || 0,
      });
      continue;
    }
    const primitive = NCCL_TESTS.find(([re]) => re.test(named ?? source))?.[1];
    if (!primitive) {
      throw new ResultFormatError(
        `${source}: cannot tell which nccl-tests binary wrote this; name the file after it ` +
          `(e.g. all_reduce_perf.txt)`,
      );
    }
    points++;
    yield {
      source,
      primitive,
      procs: Math.max(1, procs),
      transport: "nccl",
      memory: "gpu",
      threads: 1,
      type: NCCL_TYPES[c[2]] ?? c[2],
      algorithm: "",
      floats: bytes / 4,
      time_us,
      gbps: (bytes * 8) / time_us / 1e3,
      wrong: Number(c[8]) || 0,
    };
  }
  if (points === 0) throw new ResultFormatError(`${source}: nccl-tests output without rows`);
}
