/**
 * latency: a ping-pong between the ranks of each pair, one message each way per operation; the
 * row's time is half a round trip (osu_latency; with more pairs at once, osu_multi_lat).
 * @module
 */

import { alloc, head, prepared } from "./_buffers.ts";
import { pairOf, POINT_TO_POINT } from "./_pairs.ts";
import { clearRecvFillSend, wrongInputs } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** latency's case. */
export const LATENCY: PrimitiveSpec = {
  name: "latency",
  ...POINT_TO_POINT,
  flow: (ranks) => ({ messages: 2, streams: ranks / 2 }),
  // One copy per byte of a stream, by its receiver, a stream per pair (as bw's).
  work: () => ({ copy: 2, reduce: 0 }),
  footprint: (count) => 2 * count,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    const { peer, starts } = pairOf(rank, size);
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o, rank, size),
        run: starts
          ? async () => {
            await comm.send(send, peer);
            await comm.recv(recv, peer);
          }
          : async () => {
            await comm.recv(recv, peer);
            await comm.send(send, peer);
          },
        wrong: () => wrongInputs(recv, o, peer, size),
      };
    });
  },
};
