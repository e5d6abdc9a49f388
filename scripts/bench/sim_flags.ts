/**
 * The flags of a simulated network (`--transport sim`): LogGP's parameters, hosts of ranks, the
 * fabric, payloads, and a calibration file (or this machine's kept limits) they start from.
 * docs/transports/sim.md says what each means.
 * @module
 */

import {
  checkModel,
  DEFAULT_MODEL,
  type SimFabric,
  type SimModel,
  type SimPayload,
  type TransportFacts,
} from "../../internal.ts";
import type { MachineLimits } from "../../bench/limits/machine_limits.ts";
import { readPlainFile } from "../../deno/mod.ts";
import { keptLimits } from "../limits/this_machine.ts";
import { defineFlags, type Flags, UsageError } from "../common/flags.ts";

/** Payload modes (`--payload`): auto picks real where the group's buffers are small enough. */
export const PAYLOADS = ["auto", "real", "phantom"] as const;

/** Buffers of all ranks together above which `--payload auto` runs phantom payloads. */
export const REAL_PAYLOAD_MAX_BYTES = 2 ** 31;

/** The simulated network's flags (accepted with `--transport sim` only). */
export const SIM_FLAGS = defineFlags({
  hosts: {
    help: "sim: simulated hosts (default --procs / --per-host)",
    kind: "integer",
    min: 1,
    max: 4096,
  },
  "per-host": {
    help: "sim: ranks per simulated host (their own links, --intra-link; the host's link shared)",
    kind: "integer",
    min: 1,
    max: 4096,
  },
  link: {
    help:
      `sim: each host's link, e.g. 100gbit, 400mbit, 12.5gbps (bytes) (default ${DEFAULT_MODEL.inter.gbps}gbit)`,
  },
  latency: {
    help:
      `sim: a message's latency between hosts, e.g. 2us, 500ns, 1ms (default ${DEFAULT_MODEL.inter.latencyUs}us)`,
  },
  "intra-link": {
    help: `sim: each rank's link within a host (default ${DEFAULT_MODEL.intra.gbps}gbit)`,
  },
  "intra-latency": {
    help: `sim: a message's latency within a host (default ${DEFAULT_MODEL.intra.latencyUs}us)`,
  },
  overhead: {
    help:
      `sim: LogGP's o, a rank's CPU time per message sent or received (default ${DEFAULT_MODEL.overheadUs}us)`,
  },
  gap: {
    help:
      `sim: LogGP's g, the least time between two messages' starts on a port (default ${DEFAULT_MODEL.gapUs}us)`,
  },
  "reduce-rate": {
    help:
      `sim: a rank's reduction rate, e.g. 10GB/s (0: free) (default ${DEFAULT_MODEL.reduceGBps}GB/s)`,
  },
  fabric: {
    help: "sim: flat (one switch), or tree:H:X (leaves of H hosts, uplinks X:1 oversubscribed)",
  },
  payload: {
    help: "sim: real (carried and checked), phantom (sized only: 1024 ranks × 2^28 floats fit), " +
      "or auto (real up to 2 GiB of buffers in all)",
    kind: "choice",
    choices: PAYLOADS,
    default: "auto",
  },
  "sim-model": {
    help: "sim: a calibration file (JSON of a model; flags override it), or `limits` for this " +
      "machine's kept limits (deno task limits)",
    path: true,
  },
});

/** Flags of {@linkcode SIM_FLAGS}. */
export type SimFlags = Flags<typeof SIM_FLAGS>;

/** The names of the sim flags, as typed. */
const NAMES = Object.keys(SIM_FLAGS) as (keyof typeof SIM_FLAGS)[];

/**
 * The model the flags describe for a group of `procs` ranks, with `payload` auto resolved by
 * `bufferBytes` (every rank's buffers at the largest size); undefined unless the transport is
 * `sim`, where any sim flag is refused in one line.
 */
export function planModel(
  v: SimFlags & { given: ReadonlySet<string> },
  transport: TransportFacts,
  procs: number,
  bufferBytes: (payload: SimPayload) => number,
): SimModel | undefined {
  if (!transport.simulated) {
    const given = NAMES.find((n) => v.given.has(n));
    if (given) {
      throw new UsageError(
        `--${given} is not accepted: it applies to a simulated transport (--transport sim), ` +
          `not ${transport.name}`,
      );
    }
    return undefined;
  }
  const base = startingModel(v["sim-model"]);
  const perHost = v["per-host"] ?? base.perHost ?? 1;
  const hosts = v.hosts ?? (v.given.has("per-host") ? undefined : base.hosts) ?? procs / perHost;
  if (!Number.isInteger(hosts) || hosts * perHost !== procs) {
    throw new UsageError(
      `--procs ${procs} is not accepted with ${v.hosts ?? hosts} hosts × --per-host ${perHost}: ` +
        `the ranks must fill the hosts (procs = hosts × per-host)`,
    );
  }
  const model: SimModel = {
    ...base,
    hosts,
    perHost,
    inter: {
      latencyUs: time("latency", v.latency) ?? base.inter.latencyUs,
      gbps: rate("link", v.link) ?? base.inter.gbps,
    },
    intra: {
      latencyUs: time("intra-latency", v["intra-latency"]) ?? base.intra.latencyUs,
      gbps: rate("intra-link", v["intra-link"]) ?? base.intra.gbps,
    },
    overheadUs: time("overhead", v.overhead) ?? base.overheadUs,
    gapUs: time("gap", v.gap) ?? base.gapUs,
    reduceGBps: reduceRate(v["reduce-rate"]) ?? base.reduceGBps,
    fabric: fabric(v.fabric) ?? base.fabric,
    payload: "real",
    source: NAMES.some((n) => v.given.has(n) && n !== "sim-model" && n !== "payload")
      ? (base.source === "flags" ? "flags" : `${base.source}, with flags`)
      : base.source,
  };
  model.payload = v.payload === "auto"
    ? (bufferBytes("real") <= REAL_PAYLOAD_MAX_BYTES ? "real" : "phantom")
    : v.payload;
  if (model.fabric.kind === "tree" && model.fabric.hostsPerLeaf > hosts) {
    throw new UsageError(
      `--fabric tree:${model.fabric.hostsPerLeaf}:${model.fabric.oversubscription} is not ` +
        `accepted: a leaf of more hosts than the ${hosts} simulated`,
    );
  }
  return model;
}

/** The model a run starts from: the defaults, a calibration file, or this machine's limits. */
function startingModel(
  file: string | undefined,
): Omit<SimModel, "hosts" | "perHost"> & Partial<SimModel> {
  if (file === undefined) return DEFAULT_MODEL;
  if (file.endsWith("/limits") && !existsFile(file)) {
    const limits = keptLimits();
    if (!limits) {
      throw new UsageError(
        "--sim-model limits is not accepted: this machine's limits were not measured (deno task " +
          "limits measures them)",
      );
    }
    return modelFromLimits(limits);
  }
  let bytes;
  try {
    bytes = readPlainFile(file, { maxBytes: 1 << 20 });
  } catch (e) {
    throw new UsageError(`--sim-model ${file} is not accepted: ${(e as Error).message}`);
  }
  if (!bytes) throw new UsageError(`--sim-model ${file} is not accepted: no such file`);
  let raw: Partial<SimModel>;
  try {
    raw = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new UsageError(`--sim-model ${file} is not accepted: it is not JSON`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new UsageError(`--sim-model ${file} is not accepted: a JSON object of a model`);
  }
  const merged = {
    ...DEFAULT_MODEL,
    hosts: 1,
    perHost: 1,
    ...raw,
    payload: "real" as const,
    source: typeof raw.source === "string" ? `${file} (${raw.source})` : file,
  };
  try {
    checkModel(merged);
  } catch (e) {
    throw new UsageError(`--sim-model ${file} is not accepted: ${(e as Error).message}`);
  }
  const { hosts: _h, perHost: _p, ...rest } = merged;
  return {
    ...rest,
    ...(raw.hosts && { hosts: raw.hosts }),
    ...(raw.perHost && { perHost: raw.perHost }),
  };
}

function existsFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * This machine as a fabric, from its kept limits: one rank a host, hosts linked as loopback TCP
 * links two processes (the socket calls' one-way time as L, Deno's own cost over them as o on
 * each side, one connection's stream as the link), ranks of a host as two workers through shared
 * memory, and one core's reduction at 16 MiB.
 */
export function modelFromLimits(limits: MachineLimits): Omit<SimModel, "hosts" | "perHost"> {
  const tcp = limits.tcpRoundTripUs?.median, socket = limits.socketRoundTripUs?.median;
  const stream = limits.loopbackStreamGBs?.median;
  const oneWay = (socket ?? tcp ?? 2 * DEFAULT_MODEL.inter.latencyUs) / 2;
  const reduce = limits.reduce.one;
  const at = reduce.bytes.findIndex((b) => b >= 16 * 2 ** 20);
  const copy = limits.copy.one;
  return {
    ...DEFAULT_MODEL,
    inter: { latencyUs: oneWay, gbps: stream ? stream * 8 : DEFAULT_MODEL.inter.gbps },
    intra: {
      latencyUs: limits.cacheLineRoundTripUs.median / 2,
      gbps: copy.gbs[copy.gbs.length - 1].median * 8,
    },
    overheadUs: tcp && socket ? Math.max(0, (tcp - socket) / 4) : DEFAULT_MODEL.overheadUs,
    reduceGBps: reduce.gbs[at >= 0 ? at : reduce.gbs.length - 1].median,
    source: `deno task limits of ${limits.date}`,
  };
}

/** µs of a time written `2us`, `1.5µs`, `500ns`, `1ms`, `0`. */
export function time(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?(?:e-?\d+)?)(ns|us|µs|ms|s)?$/.exec(value.trim());
  const scale = { ns: 1e-3, us: 1, "µs": 1, ms: 1e3, s: 1e6 } as const;
  if (!m || (m[2] === undefined && Number(m[1]) !== 0)) {
    throw new UsageError(`--${flag} ${value} is not accepted: a time such as 2us, 500ns or 1ms`);
  }
  return Number(m[1]) * (m[2] ? scale[m[2] as keyof typeof scale] : 1);
}

/** Gbit/s of a rate written as tc writes them: `100gbit`, `400mbit` (bits), `12.5gbps` (bytes). */
export function rate(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)([kmgt]?)(bit|bps)$/i.exec(value.trim());
  const prefix = { "": 1e-9, k: 1e-6, m: 1e-3, g: 1, t: 1e3 } as const;
  const gbps = m
    ? Number(m[1]) * prefix[m[2].toLowerCase() as keyof typeof prefix] *
      (m[3].toLowerCase() === "bps" ? 8 : 1)
    : 0;
  if (!(gbps > 0)) {
    throw new UsageError(
      `--${flag} ${value} is not accepted: a positive rate such as 100gbit, 400mbit or 12.5gbps`,
    );
  }
  return gbps;
}

/** GB/s of a reduction rate written `10GB/s`. */
export function reduceRate(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)\s*GB\/s$/i.exec(value.trim());
  if (!m) {
    throw new UsageError(`--reduce-rate ${value} is not accepted: GB/s, such as 10GB/s or 0GB/s`);
  }
  return Number(m[1]);
}

function fabric(value: string | undefined): SimFabric | undefined {
  if (value === undefined) return undefined;
  if (value === "flat") return { kind: "flat" };
  const m = /^tree:(\d+):(\d+(?:\.\d+)?)$/.exec(value);
  if (!m || Number(m[1]) < 1 || !(Number(m[2]) >= 1)) {
    throw new UsageError(
      `--fabric ${value} is not accepted: flat, or tree:H:X (H ≥ 1 hosts a leaf, X ≥ 1 the ` +
        "uplinks' oversubscription, e.g. tree:16:4)",
    );
  }
  return { kind: "tree", hostsPerLeaf: Number(m[1]), oversubscription: Number(m[2]) };
}
