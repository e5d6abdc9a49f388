/**
 * sendrecv: each rank sends its buffer to the right and receives the left one's, a ring exchange (nccl-tests' sendrecv).
 * @module
 */

import { alloc, copy, head, prepared, whole } from "./_buffers.ts";
import { clearRecvFillSend, wrongInputs } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** sendrecv's case. */
export const SENDRECV: PrimitiveSpec = {
  name: "sendrecv",
  reduces: false,
  rooted: false,
  inPlace: false,
  busFactor: () => 1,
  work: () => ({ copy: 2, reduce: 0 }), // each of the two receives the size
  busFormula: "1",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    const right = (rank + 1) % size, left = (rank - 1 + size) % size;
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o, rank, size),
        run: async () => {
          if (size === 1) return copy(send, recv);
          await Promise.all([comm.send(send, right), comm.recv(recv, left)]);
        },
        wrong: () => wrongInputs(recv, o, size === 1 ? rank : left, size),
      };
    });
  },
};
