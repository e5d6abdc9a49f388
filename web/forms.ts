/**
 * The page's forms as runs: the benchmark form as a sweep, with the CLI's choices (primitive,
 * transport, ranks, memory kind, dtype, op, root, algorithm, size range, iterations, timing, in
 * place) planned as the CLI plans one, and the training form as a run with the CLI's defaults;
 * each wrong value is one line saying what is accepted.
 * @module
 */

import { algorithmsFor } from "../internal.ts";
import { WEB_TRANSPORTS } from "../internal.ts";
import { type WebTransportName } from "../core.ts";
import { needsDevice, sideOfMemory } from "../internal.ts";
import { MEMORY_KINDS } from "../internal.ts";
import { type MemoryKind } from "../core.ts";
import { type Primitive, PRIMITIVES } from "../bench/cases.ts";
import type { SweepOptions } from "../bench/harness.ts";
import { describeSweep, planSweep } from "../bench/sweep_plan.ts";
import { DEVICES, type TrainConfig } from "../trainer/config.ts";

/** A sweep the form asks for, before it runs. */
export interface FormSweep {
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
    throw new Error(`${field} ${value} is not accepted; accepted: ${accepted.join(", ")}`);
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
  primitive: Primitive,
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

/** The form's fields by the planner's names (the others are the same). */
const FIELDS: Record<string, string> = { procs: "ranks", "step-factor": "step factor" };

/**
 * The form's values (as its fields hold them) as a sweep in a tab that offers `tab`, planned as
 * the CLI plans one (bench/sweep_plan.ts); the header is the CLI's, and says it ran in a tab.
 */
export function planFormSweep(v: Record<string, string>, tab: TabOffer): FormSweep {
  const primitive = oneOf("primitive", v.primitive, Object.keys(PRIMITIVES) as Primitive[]);
  const transport = WEB_TRANSPORTS.byName[oneOf("transport", v.transport, WEB_TRANSPORTS.names)];
  const procs = primitive === "sendrecv" ? 2 : integer("ranks", v.procs, 1, maxTabRanks(tab.cores));
  const { sweep, device } = planSweep({
    primitive,
    transport,
    procs,
    memory: v.memory,
    algorithm: v.algorithm,
    dtype: v.dtype,
    op: v.op,
    root: v.root || "0",
    min: v.min,
    max: v.max,
    iters: v.iters,
    timing: v.timing || "back-to-back",
    inPlace: v.inPlace !== "false",
  }, {
    field: (name) => FIELDS[name] ?? name,
    refuse: (message) => new Error(message),
  });
  if (device && !tab.adapter) {
    throw new Error(
      `${transport.name} with ${sweep.memory} memory needs a WebGPU adapter; this tab has none`,
    );
  }
  const header = [
    ...describeSweep(sweep, { procs, transport, device }),
    "in a browser tab: ranks are the tab's workers (or logical ranks on its GPU)",
  ];
  return { sweep, procs, transport: transport.name, gpu: device, header };
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
    reproducible: false,
    device,
    seed: integer("seed", v.seed || "0", 0, 2 ** 32 - 1),
    trainSamples: samples("trainSamples"),
    testSamples: samples("testSamples"),
    timeoutMs: 30_000,
  };
}
