/**
 * The network the `sim` transport simulates (docs/transports/sim.md): LogGP's parameters per kind
 * of link, hosts of ranks, and a flat or two-level fabric. A model is data: flags build one, a
 * calibration file holds one, and every simulated run's metadata records the one it ran.
 * @module
 */

import type { LinkCosts } from "../types.ts";

/** One kind of link: what a message pays on it besides the ranks' overheads. */
export interface SimLink {
  /** L: µs from a message's last byte leaving to its arrival. */
  latencyUs: number;
  /** The rate a message streams at, Gbit/s (LogGP's G = 8e-3 / gbps µs per byte). */
  gbps: number;
}

/** The fabric between hosts. */
export type SimFabric =
  /** Every host's link straight to one non-blocking switch. */
  | { kind: "flat" }
  /**
   * Leaf switches of `hostsPerLeaf` hosts under one spine; each leaf's uplink carries its hosts'
   * links divided by `oversubscription`, and a message between leaves crosses both uplinks.
   */
  | { kind: "tree"; hostsPerLeaf: number; oversubscription: number };

/** Whether a run's payloads are carried (and checked) or only sized. */
export type SimPayload = "real" | "phantom";

/** A simulated network (see the module docs). */
export interface SimModel {
  /** Hosts; rank r runs on host ⌊r / perHost⌋. */
  hosts: number;
  /** Ranks per host. */
  perHost: number;
  /** Between hosts: each host's link, shared by its ranks. */
  inter: SimLink;
  /** Between ranks of one host: each rank's own port. */
  intra: SimLink;
  /** o: µs of a rank's CPU per message it sends and per message it receives. */
  overheadUs: number;
  /** g: µs at least between the starts of two messages on one port. */
  gapUs: number;
  /** γ: the rate a rank reduces at, GB/s of output (0: reductions are free). */
  reduceGBps: number;
  /** The fabric between hosts. */
  fabric: SimFabric;
  /** Whether payloads are carried and checked, or sized only. */
  payload: SimPayload;
  /** Where the numbers came from: `flags`, a calibration file's path, or what measured them. */
  source: string;
}

/** What a model leaves out, filled in: a 100 Gbit/s, 2 µs fabric of one-rank hosts. */
export const DEFAULT_MODEL: Omit<SimModel, "hosts" | "perHost"> = {
  inter: { latencyUs: 2, gbps: 100 },
  intra: { latencyUs: 0.5, gbps: 200 },
  overheadUs: 0.2,
  gapUs: 0,
  reduceGBps: 10,
  fabric: { kind: "flat" },
  payload: "real",
  source: "flags",
};

/** Ranks in a model's group. */
export function ranksOf(model: SimModel): number {
  return model.hosts * model.perHost;
}

/** µs per byte on a link. */
export function usPerByte(link: SimLink): number {
  return 8e-3 / link.gbps;
}

/**
 * The model as `auto` prices algorithms (LinkCosts): α a message's whole cost on the slowest
 * kind of link the group has (its latency and both ranks' overheads), β that link's µs per byte,
 * γ the reduction's.
 */
export function linkCostsOf(model: SimModel): LinkCosts {
  const link = model.hosts > 1 ? model.inter : model.intra;
  return {
    latencyUs: link.latencyUs + 2 * model.overheadUs,
    usPerByte: usPerByte(link),
    reduceUsPerByte: model.reduceGBps > 0 ? 1e-3 / model.reduceGBps : 0,
  };
}

/** The model in one line, for the lines above a table. */
export function describeModel(m: SimModel): string {
  return `simulated: ${m.hosts} hosts × ${m.perHost} ranks; ${describeFabric(m)}`;
}

/** The model's links, costs and fabric in one line (what it is whatever its size). */
export function describeFabric(m: SimModel): string {
  const link = (l: SimLink) => `${l.gbps} Gbit/s, ${l.latencyUs} µs`;
  const fabric = m.fabric.kind === "flat"
    ? "flat fabric"
    : `tree fabric (${m.fabric.hostsPerLeaf} hosts a leaf, ${m.fabric.oversubscription}:1 ` +
      "oversubscribed)";
  return `between hosts ${link(m.inter)}` + (m.perHost > 1 ? `; within ${link(m.intra)}` : "") +
    `; o ${m.overheadUs} µs, g ${m.gapUs} µs, reduce ${m.reduceGBps} GB/s; ${fabric}; ` +
    `${m.payload} payloads; model from ${m.source}`;
}

/**
 * Checks a model read from anywhere (a file, structured-cloned options): the first bad field in
 * one line, naming what is accepted.
 */
export function checkModel(m: SimModel): SimModel {
  const positive = (what: string, v: unknown, integer = false) => {
    if (
      typeof v !== "number" || !(v > 0) || !Number.isFinite(v) || (integer && !Number.isInteger(v))
    ) {
      throw new RangeError(
        `sim model: ${what} ${v} is not accepted: a positive ${integer ? "integer" : "number"}`,
      );
    }
  };
  const nonNegative = (what: string, v: unknown) => {
    if (typeof v !== "number" || !(v >= 0) || !Number.isFinite(v)) {
      throw new RangeError(`sim model: ${what} ${v} is not accepted: a number ≥ 0`);
    }
  };
  positive("hosts", m.hosts, true);
  positive("perHost", m.perHost, true);
  for (const [name, link] of [["inter", m.inter], ["intra", m.intra]] as const) {
    if (typeof link !== "object" || link === null) {
      throw new RangeError(`sim model: ${name} is not accepted: { latencyUs, gbps }`);
    }
    nonNegative(`${name}.latencyUs`, link.latencyUs);
    positive(`${name}.gbps`, link.gbps);
  }
  nonNegative("overheadUs", m.overheadUs);
  nonNegative("gapUs", m.gapUs);
  nonNegative("reduceGBps", m.reduceGBps);
  if (m.fabric?.kind === "tree") {
    positive("fabric.hostsPerLeaf", m.fabric.hostsPerLeaf, true);
    positive("fabric.oversubscription", m.fabric.oversubscription);
  } else if (m.fabric?.kind !== "flat") {
    throw new RangeError(
      `sim model: fabric ${JSON.stringify(m.fabric)} is not accepted: flat or tree`,
    );
  }
  if (m.payload !== "real" && m.payload !== "phantom") {
    throw new RangeError(`sim model: payload ${m.payload} is not accepted: real or phantom`);
  }
  return m;
}
