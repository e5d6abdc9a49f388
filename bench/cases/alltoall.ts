/**
 * alltoall: block j of every rank's buffer to rank j.
 * @module
 */

import {
  alloc,
  collectiveFacts,
  head,
  multipleOfRanks,
  prepared,
  wrongBlocks,
} from "./_buffers.ts";
import { clearRecvFillSend } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** alltoall's case. */
export const ALLTOALL: PrimitiveSpec = {
  ...collectiveFacts("alltoall"),
  inPlace: false,
  busFactor: (n) => (n - 1) / n,
  work: (n) => ({ copy: n - 1, reduce: 0 }),
  busFormula: "(n-1)/n",
  footprint: (count) => 2 * count,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const n = Math.floor(count / size);
      const send = head(sendBuf, n * size), recv = head(recvBuf, n * size);
      const options = { algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o, rank, size),
        run: () => comm.alltoall(send, recv, options),
        // Block q came from rank q: its send's block for this rank.
        wrong: () => wrongBlocks(recv, n, size, o, (q) => [q, rank * n]),
      };
    });
  },
};
