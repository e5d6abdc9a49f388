/**
 * Hierarchical collectives (`hierarchical`) for a group of hosts × threads (`HierarchyAccess`):
 * a shared-memory phase among the ranks of each host, an inter-host phase split `threads` ways —
 * local rank t carries part t of the buffer over its channel (the ranks with local index t on
 * every host), so every local rank drives its own share of the links, as NCCL's channels do —
 * and a shared-memory phase back (Horovod's hierarchical allreduce; NCCL's tree/ring split).
 *
 * Each host link carries each part once each way: an allreduce of B bytes over P hosts puts about
 * 2(P−1)/P · B through a host's link, against 2(N−1)/N · B · threads for a flat ring over the
 * N = P · threads ranks placed host by host. The inter-host phase runs a message algorithm the
 * registry picks for the channel (`hostAlgorithm`, collective_table.ts).
 * @module
 */

import { copy } from "../../kernels/copy.ts";
import { reduce } from "../../kernels/reduce.ts";
import type { HierarchyAccess, SharedAccess } from "../transports/transport.ts";
import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { AllgatherRun } from "./allgather.ts";
import type { AllreduceRun } from "./allreduce.ts";
import type { BcastRun } from "./bcast.ts";
import { hostAlgorithm } from "./collective_table.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import type { ReduceRun } from "./reduce.ts";
import type { ReduceScatterRun } from "./reduce_scatter.ts";
import { requireViews } from "./_shm_direct.ts";

/** The two levels of `ctx`'s group: contexts over this host's ranks and over this rank's channel. */
function levels(ctx: CollectiveContext) {
  const h: HierarchyAccess | undefined = ctx.transport.hierarchy;
  if (!h) {
    throw new TypeError(
      `Algorithm hierarchical needs a group of hosts × threads; transport ${ctx.transport.name} ` +
        `has one level (use it with --threads)`,
    );
  }
  const host = ctx.over(h.group);
  return { h, host, channel: ctx.over(h.channel), shared: h.group.shared as SharedAccess };
}

/** A heap view the host's ranks can read for `buf` (itself when it lives in the heap). */
function heapView(ctx: CollectiveContext, buf: TypedArray, slot: number): TypedArray {
  return ctx.heap.owns(buf) ? buf : ctx.scratch(dtypeOf(buf), buf.length, slot);
}

/**
 * Allreduce: the host's ranks reduce part t of their inputs into rank t's output (shared memory),
 * rank t allreduces its part over its channel, then every rank copies the other parts from its
 * host's ranks.
 */
const hierarchicalAllreduce: AllreduceRun = async (ctx, input, output, op) => {
  const { h, host, channel, shared } = levels(ctx);
  const parts = split(input, h.threads);
  const [s, e] = parts(h.local);
  const inputs = requireViews(shared.exchangeViews(host.staged(input, 2), host.stamp));
  const work = heapView(host, output, 3);
  const mine = work.subarray(s, e);
  reduceParts(op, mine, inputs, h.local, s, e);
  if (e > s) await hostAlgorithm(channel, "allreduce", mine.byteLength)(channel, mine, mine, op);
  gatherParts(shared, host, work, parts, h.threads, h.local);
  if (work !== output) copy(output, work);
};

/**
 * Reduce to `root`: parts reduced on each host as in allreduce, each part reduced over its
 * channel to the root's host, where the root gathers them.
 */
const hierarchicalReduce: ReduceRun = async (ctx, input, output, op, root) => {
  const { h, host, channel, shared } = levels(ctx);
  const rootHost = Math.floor(root / h.threads), rootLocal = root % h.threads;
  const parts = split(input, h.threads);
  const [s, e] = parts(h.local);
  const inputs = requireViews(shared.exchangeViews(host.staged(input, 2), host.stamp));
  const work = host.scratch(dtypeOf(input), input.length, 3);
  const mine = work.subarray(s, e);
  reduceParts(op, mine, inputs, h.local, s, e);
  if (e > s) {
    await hostAlgorithm(channel, "reduce", mine.byteLength)(channel, mine, mine, op, rootHost);
  }
  if (h.host !== rootHost) return void shared.barrier(host.stamp);
  const reduced = requireViews(shared.exchangeViews(work, host.stamp));
  if (h.local === rootLocal) {
    for (let t = 0; t < h.threads; t++) {
      const [ps, pe] = parts(t);
      output.set(reduced[t].subarray(ps, pe), ps);
    }
  }
  shared.barrier(host.stamp);
};

/**
 * Broadcast from `root`: the root's host splits the buffer among its ranks (part t to rank t),
 * each part is broadcast over its channel, and every rank copies the other parts from its host.
 */
const hierarchicalBcast: BcastRun = async (ctx, buf, root) => {
  const { h, host, channel, shared } = levels(ctx);
  const rootHost = Math.floor(root / h.threads), rootLocal = root % h.threads;
  const parts = split(buf, h.threads);
  const [s, e] = parts(h.local);
  const work = heapView(host, buf, 3);
  if (h.host === rootHost) {
    if (h.local === rootLocal && work !== buf) copy(work, buf);
    const views = shared.exchangeViews(work, host.stamp);
    if (h.local !== rootLocal) work.set(views[rootLocal]!.subarray(s, e), s);
  }
  const mine = work.subarray(s, e);
  if (e > s) await hostAlgorithm(channel, "bcast", mine.byteLength)(channel, mine, rootHost);
  gatherParts(shared, host, work, parts, h.threads, h.local);
  if (work !== buf) copy(buf, work);
};

/**
 * Allgather: each rank gathers its channel's blocks (rank t of every host), then copies the other
 * channels' blocks from its host's ranks.
 */
const hierarchicalAllgather: AllgatherRun = async (ctx, send, recv) => {
  const { h, host, channel, shared } = levels(ctx);
  const n = send.length;
  const mine = host.scratch(dtypeOf(send), n * h.hosts, 3);
  await hostAlgorithm(channel, "allgather", mine.byteLength)(channel, send, mine);
  const gathered = requireViews(shared.exchangeViews(mine, host.stamp));
  for (let t = 0; t < h.threads; t++) {
    for (let p = 0; p < h.hosts; p++) {
      recv.set(gathered[t].subarray(p * n, (p + 1) * n), (p * h.threads + t) * n);
    }
  }
  shared.barrier(host.stamp);
};

/**
 * Reduce-scatter: rank t reduces, over its host, the blocks of every host's rank t, then
 * reduce-scatters them over its channel: rank (host p, t) ends with block p · threads + t.
 */
const hierarchicalReduceScatter: ReduceScatterRun = async (ctx, send, recv, op) => {
  const { h, host, channel, shared } = levels(ctx);
  const n = recv.length;
  const sends = requireViews(shared.exchangeViews(host.staged(send, 2), host.stamp));
  const mine = host.scratch(dtypeOf(send), n * h.hosts, 3);
  for (let p = 0; p < h.hosts; p++) {
    const at = (p * h.threads + h.local) * n;
    const block = mine.subarray(p * n, (p + 1) * n);
    block.set(sends[0].subarray(at, at + n));
    for (let t = 1; t < h.threads; t++) reduce(op, block, block, sends[t].subarray(at, at + n));
  }
  shared.barrier(host.stamp); // every send buffer read: they may change
  await hostAlgorithm(channel, "reduceScatter", mine.byteLength)(channel, mine, recv, op);
};

/**
 * `out = inputs[own][s, e) op` every other input's `[s, e)`: `out` may be this rank's own input
 * there (in place), so it is read first. Each part is reduced by one rank of the host only.
 */
function reduceParts(
  op: KernelOp,
  out: TypedArray,
  inputs: TypedArray[],
  own: number,
  s: number,
  e: number,
): void {
  copy(out, inputs[own].subarray(s, e));
  for (let t = 0; t < inputs.length; t++) {
    if (t !== own) reduce(op, out, out, inputs[t].subarray(s, e));
  }
}

/**
 * Below this many bytes one rank of each host (local rank 0) carries the whole buffer between
 * hosts: splitting a small buffer T ways only makes T ranks wait on the network instead of one.
 */
const SPLIT_FROM_BYTES = 32 << 10;

/** `[start, end)` of the part local rank t carries between hosts. */
type Parts = (t: number) => [number, number];

/** How `buf` is split among a host's `threads` ranks for the inter-host phase. */
function split(buf: TypedArray, threads: number): Parts {
  const n = buf.length;
  return buf.byteLength < SPLIT_FROM_BYTES
    ? (t) => t === 0 ? [0, n] : [n, n]
    : (t) => chunk(n, threads, t);
}

/** Copies every other rank's part of `work` from its `work` (then waits until all have). */
function gatherParts(
  shared: SharedAccess,
  host: CollectiveContext,
  work: TypedArray,
  parts: Parts,
  threads: number,
  local: number,
): void {
  const views = requireViews(shared.exchangeViews(work, host.stamp));
  for (let t = 0; t < threads; t++) {
    if (t === local) continue;
    const [s, e] = parts(t);
    work.set(views[t].subarray(s, e), s);
  }
  shared.barrier(host.stamp);
}

/** `hierarchical` of collective `C`, running `run`; `auto` picks it where `picked`. */
function hierarchical<C extends "allreduce" | "bcast" | "reduce" | "allgather" | "reduceScatter">(
  collective: C,
  run: HostAlgorithm<C>["run"],
  picked: boolean,
): HostAlgorithm<C> {
  const winsBelow = picked ? () => Infinity : undefined;
  return { name: "hierarchical", collective, needs: "hierarchy", run, winsBelow };
}

/**
 * `hierarchical` of every collective that has one. `auto` leaves bcast and reduce to the binomial
 * tree, which crosses each host's link once per call without the shared-memory phases: on a 2 × 2
 * cluster it led them at small sizes and matched or beat them at large (docs/hierarchy.md).
 */
export const HIERARCHICAL = [
  hierarchical("allreduce", hierarchicalAllreduce, true),
  hierarchical("bcast", hierarchicalBcast, false),
  hierarchical("reduce", hierarchicalReduce, false),
  hierarchical("allgather", hierarchicalAllgather, true),
  hierarchical("reduceScatter", hierarchicalReduceScatter, true),
] as const;
