/**
 * The argument checks gather and scatter share — a block (n elements) on every rank, the whole
 * (size × n) on the root only — and gatherv's and scatterv's, with the root's counts.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import { bytesIn } from "../memory/extent.ts";
import type { AlgorithmOptions, RootOptions } from "./options.ts";
import { type ArgumentChecks, type CheckedCall, IN_PLACE, NO_LAYOUT } from "./spec.ts";
import { blocksOf, type Counts } from "./_counts.ts";

/**
 * A gather's or scatter's arguments, checked: `block` (n elements) on every rank, `whole`
 * (size × n) on the root only (other ranks' operands are `block` twice, neither read by a
 * scatter nor written by a gather).
 */
export function rootBlocks<C extends "gather" | "scatter">(
  args: ArgumentChecks,
  collective: C,
  block: BufferLike,
  whole: BufferLike | undefined,
  options: RootOptions & AlgorithmOptions,
): CheckedCall<C> {
  const gathers = collective === "gather";
  const b = args.buffer(block, gathers ? "gather" : "scatter into");
  const root = args.root(options.root ?? 0, gathers ? "gather to" : "scatter from");
  const call = {
    algorithm: options.algorithm,
    collective,
    block: b,
    bytes: bytesIn(b) * args.size,
    root,
    // The root's other buffer, or whatever another rank passed (ignored): repeated calls match.
    keep: { kind: collective, buf: block, recv: whole, options },
  };
  if (args.rank !== root) return { ...call, buffers: [[b, !gathers], [b, !gathers]] };
  if (whole === undefined) {
    throw new TypeError(
      `Cannot ${gathers ? "gather to" : "scatter from"} root ${root} without ` +
        (gathers ? "recv" : "send"),
    );
  }
  const w = args.buffer(whole, gathers ? "gather into" : "scatter");
  const [s, r] = gathers ? [b, w] : [w, b];
  const rule = gathers ? "recv = size × send" : "send = size × recv";
  args.pair(s, r, w.length === b.length * args.size, collective, rule);
  args.apart(b, w, collective, root, IN_PLACE[gathers ? "rootSend" : "rootRecv"]);
  return { ...call, buffers: [[s, false], [r, true]] };
}

/**
 * A gatherv's or scatterv's arguments, checked: `block` on every rank, `whole` on the root only,
 * with the root's counts (and displacements) of `whole`'s blocks; `block` is the root's own block
 * or apart from `whole`. Only the root knows every count, so the stamp carries none and each
 * message is checked by its own length.
 */
export function rootVBlocks<C extends "gatherv" | "scatterv">(
  args: ArgumentChecks,
  collective: C,
  block: BufferLike,
  whole: BufferLike | undefined,
  options: RootOptions & AlgorithmOptions & { counts?: Counts; displs?: Counts },
): CheckedCall<C> {
  const gathers = collective === "gatherv";
  const b = args.buffer(block, gathers ? "gatherv" : "scatterv into");
  const root = args.root(options.root ?? 0, gathers ? "gatherv to" : "scatterv from");
  const call = {
    collective,
    block: b,
    bytes: 0,
    stampCount: 0,
    root,
    algorithm: options.algorithm,
    keep: { kind: collective, buf: block, recv: whole, options },
  };
  if (args.rank !== root) {
    return { ...call, buffers: [[b, !gathers], [b, !gathers]], layout: NO_LAYOUT };
  }
  if (whole === undefined) {
    throw new TypeError(
      `Cannot ${gathers ? "gatherv to" : "scatterv from"} root ${root} without ` +
        (gathers ? "recv" : "send"),
    );
  }
  const w = args.buffer(whole, gathers ? "gatherv into" : "scatterv");
  const name = gathers ? "recv" : "send";
  const blocks = blocksOf(
    collective,
    name,
    w.length,
    args.size,
    options.counts,
    options.displs,
    gathers,
  );
  const mine = blocks.counts[root];
  const [s, r] = gathers ? [b, w] : [w, b];
  args.pair(
    s,
    r,
    b.length === mine,
    collective,
    `${gathers ? "send" : "recv"} = ${name}Counts[${root}] (${mine})`,
  );
  args.apart(
    b,
    w,
    collective,
    root,
    IN_PLACE[gathers ? "rootSend" : "rootRecv"],
    blocks.displs[root],
  );
  const layout = gathers
    ? { ...NO_LAYOUT, recvCounts: blocks.counts, recvDispls: blocks.displs }
    : { ...NO_LAYOUT, sendCounts: blocks.counts, sendDispls: blocks.displs };
  return { ...call, buffers: [[s, false], [r, true]], layout };
}
