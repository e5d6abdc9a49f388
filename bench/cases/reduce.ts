/**
 * reduce: every rank's inputs reduced into the root's buffer, out of place and in place.
 * @module
 */

import { alloc, collectiveFacts, head, prepared, whole } from "./_buffers.ts";
import { clearRecvFillSend, writeInput, wrongInputs, wrongReducedIn } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** reduce's case. */
export const REDUCE: PrimitiveSpec = {
  ...collectiveFacts("reduce"),
  inPlace: true,
  busFactor: () => 1,
  work: (n) => ({ copy: 0, reduce: n - 1 }),
  busFormula: "1",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count, inPlace) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      if (inPlace) {
        const options = {
          root: o.root,
          op: o.op,
          algorithm: o.algorithm,
          reproducible: o.reproducible,
        };
        return {
          buffers: [recv],
          fill: () => writeInput(recv, o, rank, size),
          run: () => comm.reduce(recv, options),
          wrong: () =>
            rank === o.root ? wrongReducedIn(recv, o, size) : wrongInputs(recv, o, rank, size),
        };
      }
      const options = {
        root: o.root,
        op: o.op,
        out: recv,
        algorithm: o.algorithm,
        reproducible: o.reproducible,
      };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o, rank, size),
        run: () => comm.reduce(send, options),
        wrong: async () =>
          await wrongInputs(send, o, rank, size) +
          (rank === o.root ? await wrongReducedIn(recv, o, size) : 0),
      };
    });
  },
};
