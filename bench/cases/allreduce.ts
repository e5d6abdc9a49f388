/**
 * allreduce: every rank's inputs reduced on every rank, out of place and in place.
 * @module
 */

import { alloc, collectiveFacts, head, prepared, whole } from "./_buffers.ts";
import { clearRecvFillSend, writeInput, wrongReducedIn } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** allreduce's case. */
export const ALLREDUCE: PrimitiveSpec = {
  ...collectiveFacts("allreduce"),
  inPlace: true,
  busFactor: (n) => (2 * (n - 1)) / n,
  work: (n) => ({ copy: n - 1, reduce: n - 1 }), // reduce-scatter, then allgather
  busFormula: "2(n-1)/n",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count, inPlace) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      if (inPlace) {
        const options = { op: o.op, algorithm: o.algorithm, reproducible: o.reproducible };
        return {
          buffers: [recv],
          fill: () => writeInput(recv, o, rank, size),
          run: () => comm.allreduce(recv, options),
          wrong: () => wrongReducedIn(recv, o, size),
        };
      }
      const options = { op: o.op, out: recv, algorithm: o.algorithm, reproducible: o.reproducible };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o, rank, size),
        run: () => comm.allreduce(send, options),
        wrong: () => wrongReducedIn(recv, o, size),
      };
    });
  },
};
