/**
 * The argument check gather and scatter share: a block (n elements) on every rank, the whole
 * (size × n) on the root only.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import { bytesIn } from "../memory/extent.ts";
import type { AlgorithmOptions, RootOptions } from "./options.ts";
import { type ArgumentChecks, type CheckedCall, IN_PLACE } from "./spec.ts";

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
