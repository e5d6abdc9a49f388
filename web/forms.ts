/**
 * The page's forms as runs: the benchmark form as a sweep, with the CLI's choices (primitive,
 * transport, ranks, memory kind, dtype, op, root, algorithm, size range, iterations, timing, in
 * place), and the training form as a run with the CLI's defaults; each wrong value is one line
 * saying what is accepted.
 * @module
 */

import { algorithmsFor } from "../primitives/auto.ts";
import { WEB_TRANSPORTS, type WebTransportName } from "../primitives/registry.ts";
import { needsDevice, sideOfMemory } from "../primitives/transports/transport.ts";
import { DTYPES, MEMORY_KINDS, type MemoryKind, REDUCE_OPS } from "../primitives/types.ts";
import { deviceRefusal } from "../kernels/gpu_kernels.ts";
import { type PrimitiveName, PRIMITIVES } from "../bench/cases.ts";
import { type SweepOptions, type Timing, TIMINGS } from "../bench/harness.ts";
import { countForms, countOf, countsBetween } from "../bench/sizes.ts";
import { DEVICES, type TrainConfig } from "../trainer/config.ts";

/** A sweep the form asks for, before it runs. */
export interface PlannedSweep {
  sweep: SweepOptions;
  procs: number;
  transport: WebTransportName;
  gpu: boolean;
  header: string[];
}

/**
 * Most ranks the forms run in a tab of `cores` (navigator.hardwareConcurrency): one per core, as
 * ranks wait by spinning and more of them than cores wait on each other; two at least (sendrecv).
 */
export function maxTabRanks(cores: number): number {
  return Math.max(2, cores);
}

/** `value` if it is one of `accepted`; else an Error naming the field and what it takes. */
function oneOf<T extends string>(field: string, value: string, accepted: readonly T[]): T {
  const found = accepted.find((a) => a === value);
  if (found === undefined) {
    throw new Error(`${field} ${value} is not accepted: expected ${accepted.join(", ")}`);
  }
  return found;
}

/** An integer from `min` to `max`; else an Error naming the field. */
function integer(field: string, value: string, min: number, max: number): number {
  const n = /^\d+$/.test(value.trim()) ? Number(value) : NaN;
  if (!(Number.isSafeInteger(n) && n >= min && n <= max)) {
    throw new Error(`${field} ${value} is not accepted: expected an integer from ${min} to ${max}`);
  }
  return n;
}

/** The algorithms `primitive` can run on `transport` with `memory` (for the form's choices). */
export function formAlgorithms(
  primitive: PrimitiveName,
  transport: WebTransportName,
  memory: MemoryKind,
): string[] {
  const collective = PRIMITIVES[primitive].collective;
  const facts = WEB_TRANSPORTS.byName[transport];
  const side = sideOfMemory(facts, memory);
  return ["auto", ...(collective ? algorithmsFor(collective, { transport: facts, side }) : [])];
}

/** What a tab offers a run: whether WebGPU has an adapter, and its cores. */
export interface TabOffer {
  adapter: boolean;
  cores: number;
}

/** The form's values (as its fields hold them) as a sweep in a tab that offers `tab`. */
export function planSweep(v: Record<string, string>, tab: TabOffer): PlannedSweep {
  const adapter = tab.adapter;
  const primitive = oneOf("primitive", v.primitive, Object.keys(PRIMITIVES) as PrimitiveName[]);
  const spec = PRIMITIVES[primitive];
  const transport = oneOf("transport", v.transport, WEB_TRANSPORTS.names);
  const facts = WEB_TRANSPORTS.byName[transport];
  const procs = primitive === "sendrecv" ? 2 : integer("ranks", v.procs, 1, maxTabRanks(tab.cores));
  const memory = oneOf("memory", v.memory || facts.bestMemory, facts.memory);
  const gpu = needsDevice(facts, memory);
  if (gpu && !adapter) {
    throw new Error(`${transport} with ${memory} memory needs a WebGPU adapter; this tab has none`);
  }
  const dtype = oneOf("dtype", v.dtype, DTYPES);
  const refusal = gpu ? deviceRefusal(dtype) : undefined;
  if (refusal) throw new Error(`dtype ${dtype} is not accepted on the device: ${refusal}`);
  const op = oneOf("op", v.op, REDUCE_OPS);
  const root = integer("root", v.root || "0", 0, procs - 1);
  const algorithm = oneOf("algorithm", v.algorithm, formAlgorithms(primitive, transport, memory));
  const count = (field: string) => {
    const n = countOf(v[field].trim(), dtype);
    if (n === undefined) {
      throw new Error(`${field} ${v[field]} is not accepted: expected ${countForms(dtype)}`);
    }
    return n;
  };
  const [min, max] = [count("min"), count("max")];
  if (max < min) throw new Error(`max ${v.max} is below min ${v.min}`);
  const counts = countsBetween(min, max, { fit: (c) => spec.fit(c, procs) });
  if (counts.length === 0) {
    throw new Error(`max ${v.max} is too small: ${primitive} over ${procs} ranks needs ${procs}`);
  }
  const iters = v.iters ? integer("iters", v.iters, 1, 1e9) : undefined;
  const timing = oneOf<Timing>("timing", v.timing || "back-to-back", TIMINGS);
  const sweep: SweepOptions = {
    primitive,
    transport,
    memory,
    algorithm,
    dtype,
    op,
    root,
    counts,
    iters,
    timing,
    inPlace: v.inPlace !== "false" && spec.inPlace,
  };
  const header = [
    `dccl ${primitive} in a browser tab: ${procs} ranks, transport ${transport}, memory ${memory}, ` +
    `algorithm ${algorithm}, op ${op}, dtype ${dtype}, root ${root}`,
    `timing ${timing}; time_us = sum of rank times / (ranks * iters); busbw = algbw * ` +
    spec.busFormula,
  ];
  return { sweep, procs, transport, gpu, header };
}

/** Memory kinds a tab can use on `transport` (device ones only with an adapter). */
export function formMemories(transport: WebTransportName, adapter: boolean): MemoryKind[] {
  const carried = WEB_TRANSPORTS.byName[transport].memory;
  return MEMORY_KINDS.filter((m) =>
    carried.includes(m) && (adapter || !needsDevice(WEB_TRANSPORTS.byName[transport], m))
  );
}

/** The page's training form as a run: the CLI's defaults for what the form does not ask. */
export function planTraining(
  v: Record<string, string>,
  cores: number,
): TrainConfig<WebTransportName> {
  const transport = oneOf("sync transport", v.transport, WEB_TRANSPORTS.launching("workers"));
  const procs = integer("ranks", v.procs, 1, maxTabRanks(cores));
  const epochs = integer("epochs", v.epochs, 1, 1000);
  const batch = integer("batch", v.batch || String(Math.max(1, Math.round(64 / procs))), 1, 60_000);
  const lr = Number(v.lr);
  if (!(lr > 0 && lr <= 1000)) {
    throw new Error(`lr ${v.lr} is not accepted: expected a number above 0`);
  }
  const device = oneOf("device", v.device || "cpu", DEVICES);
  const samples = (field: string) => v[field] ? integer(field, v[field], 1, 60_000) : undefined;
  return {
    procs,
    transport,
    memory: device === "gpu" ? "gpu" : "shared",
    sync: "allreduce",
    syncEvery: 1,
    psMode: "sync",
    batch,
    epochs,
    lr,
    momentum: 0,
    layers: [784, 256, 10],
    activation: "relu",
    bucketBytes: 25 * 2 ** 20,
    gradDtype: "f32",
    errorFeedback: false,
    device,
    seed: integer("seed", v.seed || "0", 0, 2 ** 32 - 1),
    trainSamples: samples("trainSamples"),
    testSamples: samples("testSamples"),
    timeoutMs: 30_000,
  };
}
