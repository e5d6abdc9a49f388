/**
 * bw, bibw and mbw_mr: windows of sends between the ranks of each pair, as OSU streams them. A
 * window is `--window` messages posted at once, each received into a block of its own (receives
 * into one buffer would wait on each other: a call waits for calls in flight on its buffer); one
 * way ends with the receiver's one-element acknowledgement (osu_bw, osu_mbw_mr), both ways when
 * both windows are in (osu_bibw). The row's time is per message.
 * @module
 */

import type { CommBuffer } from "../../core.ts";
import { alloc, head, prepared } from "./_buffers.ts";
import { pairOf, POINT_TO_POINT } from "./_pairs.ts";
import { clear, writeInput, wrongInputs } from "../exact_inputs.ts";
import { DEFAULT_WINDOW, type PrimitiveSpec } from "./spec.ts";

/** A streaming test: `bothWays` sends both ways at once (bibw). */
function streaming(name: "bw" | "bibw" | "mbwMr", bothWays: boolean): PrimitiveSpec {
  const ways = bothWays ? 2 : 1;
  return {
    name,
    ...POINT_TO_POINT,
    windowed: true,
    flow: (ranks, window) => ({ messages: window, streams: ways * ranks / 2 }),
    // Per byte of the row's bandwidth (every stream's), one copy by its receiver: the bound is a
    // core's copy rate per stream, as many at once as streams (bench/limits/machine_limits.ts).
    work: () => ({ copy: 2 / ways, reduce: 0 }),
    // A send buffer and a window of receives on each rank (a one-way sender needs only one).
    footprint: (count, _ranks, o) => count * (1 + (o.window ?? DEFAULT_WINDOW)),
    prepare(comm, maxCount, o) {
      const window = o.window ?? DEFAULT_WINDOW;
      const { rank, size } = comm;
      const { peer, starts } = pairOf(rank, size);
      const sends = bothWays || starts, receives = bothWays || !starts;
      const sendBuf = alloc(comm, sends ? maxCount : 1, o);
      const recvBuf = alloc(comm, receives ? maxCount * window : 1, o);
      const ack = alloc(comm, 1, o);
      return prepared(comm, o, [sendBuf, recvBuf, ack], (count) => {
        const send = head(sendBuf, count);
        const blocks: CommBuffer[] = receives
          ? Array.from({ length: window }, (_, j) => recvBuf.subarray(j * count, (j + 1) * count))
          : [];
        const post = () => {
          const posted: Promise<unknown>[] = blocks.map((b) => comm.recv(b, peer));
          for (let j = 0; sends && j < window; j++) posted.push(comm.send(send, peer));
          return posted;
        };
        return {
          buffers: [send, ...blocks],
          fill: async () => {
            if (sends) await writeInput(send, o, rank, size);
            for (const b of blocks) await clear(b);
          },
          run: bothWays
            ? async () => {
              await Promise.all(post());
            }
            : starts
            ? async () => {
              await Promise.all(post());
              await comm.recv(ack, peer);
            }
            : async () => {
              await Promise.all(post());
              await comm.send(ack, peer);
            },
          wrong: async () => {
            let wrong = 0;
            for (const b of blocks) wrong += await wrongInputs(b, o, peer, size);
            return wrong;
          },
        };
      });
    },
  };
}

/** bw's case: one way, one pair (osu_bw). */
export const BW: PrimitiveSpec = streaming("bw", false);

/** bibw's case: both ways at once (osu_bibw). */
export const BIBW: PrimitiveSpec = streaming("bibw", true);

/** mbw_mr's case: one way on every pair at once, with the message rate (osu_mbw_mr). */
export const MBW_MR: PrimitiveSpec = streaming("mbwMr", false);
