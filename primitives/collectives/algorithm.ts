/**
 * What every algorithm file exports: one descriptor that holds all its facts — its name, the
 * collective it computes, what it needs of a transport, how it runs and what it costs between
 * hosts — as gloo keeps `allreduce_ring.h` whole and NCCL a transport in one table row. The
 * registry only lists descriptors; `auto` reads their needs and prices their costs.
 * @module
 */

import type { GpuBuffer } from "../memory/gpu_memory.ts";
import type { AlgorithmNeed, LinkCosts, Side, TypedArray } from "../types.ts";
import type { CollectiveName, Signatures } from "./collective_table.ts";

/** Needs whose algorithms work on host views. */
export type HostNeed = "messages" | "shared" | "hierarchy";
/** Needs whose algorithms work on device buffers (device views, or buffers they stage). */
export type DeviceNeed = "device" | "staging";

/** The call an algorithm is priced for. */
export interface PricedCall {
  /** Bytes of the buffer on each rank (the whole buffer for the block collectives). */
  bytes: number;
  /** Ranks. */
  size: number;
}

/** The facts every descriptor states. */
export interface Facts<C extends CollectiveName, N extends AlgorithmNeed> {
  /** Its name in its collective (the CLI's `--algorithm`). */
  readonly name: string;
  /** The collective it computes. */
  readonly collective: C;
  /** What the transport must offer (a capability, never a transport's name). */
  readonly needs: N;
  /**
   * Microseconds of one call between hosts whose links cost `links` (Hockney's α–β model with a
   * reduction term γ, docs/auto.md "Between hosts"). `auto` takes the cheapest priced algorithm
   * the transport can run there; one without a cost is never picked between hosts.
   */
  cost?(links: LinkCosts, call: PricedCall): number;
  /**
   * Where `auto` picks it on one host (docs/auto.md): the buffer size, in bytes, below which it
   * wins a call on `size` ranks; `Infinity` from where the others of its kind stop, 0 never.
   * Among the algorithms of the most direct kind the transport runs (direct access, then a
   * hierarchy, then messages or staging), `auto` takes the one whose bound is the smallest above
   * the call's bytes. Measured with the harness and `deno task compare`; a transport may restate
   * it (`TransportFacts.winsBelow`). Absent: never picked on one host, only forced.
   */
  winsBelow?(size: number): number;
  /**
   * Elements of scratch the busiest rank holds through a call of `count` elements per rank (the
   * whole buffer for the block collectives) on `size` ranks, beyond the call's own buffers: the
   * benchmark sizes its sweeps by it (bench/harness.ts, `memoryNeeded`). None when absent.
   */
  scratch?(count: number, size: number): number;
}

/** An algorithm on host buffers: it runs on host views. */
export interface HostAlgorithm<C extends CollectiveName = CollectiveName>
  extends Facts<C, HostNeed> {
  /** Runs one call on host views. */
  readonly run: Signatures<TypedArray>[C];
}

/** An algorithm on device buffers: it runs on the buffers themselves. */
export interface DeviceAlgorithm<C extends CollectiveName = CollectiveName>
  extends Facts<C, DeviceNeed> {
  /** Runs one call on device buffers. */
  readonly run: Signatures<GpuBuffer>[C];
}

/** One algorithm of collective `C`. */
export type AlgorithmOf<C extends CollectiveName> = HostAlgorithm<C> | DeviceAlgorithm<C>;

/** An algorithm of any collective. */
export type Algorithm = AlgorithmOf<CollectiveName>;

/** The side of memory an algorithm with these needs works on. */
export function sideOfNeed(need: AlgorithmNeed): Side {
  return need === "device" || need === "staging" ? "device" : "host";
}

/** Whether `algorithm` works on host views. */
export function onHost<C extends CollectiveName>(
  algorithm: AlgorithmOf<C>,
): algorithm is HostAlgorithm<C> {
  return sideOfNeed(algorithm.needs) === "host";
}
