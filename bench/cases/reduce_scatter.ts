/**
 * reduceScatter: the reduction of every rank's whole buffer, block by block, one block a rank.
 * @module
 */

import { BETWEEN_BLOCKS, blockCase, collectiveFacts } from "./_buffers.ts";
import { clearRecvFillSend, wrongReducedIn } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** reduceScatter's case. */
export const REDUCE_SCATTER: PrimitiveSpec = {
  ...collectiveFacts("reduceScatter"),
  inPlace: true,
  ...BETWEEN_BLOCKS,
  work: (n) => ({ copy: 0, reduce: n - 1 }), // n − 1 sums for each element of the blocks
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    return blockCase(comm, maxCount, o, false, rank, (n, send, recv) => {
      const options = { op: o.op, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.reduceScatter(send, recv, options),
        wrong: () => wrongReducedIn(recv, o.op, size, rank * n),
      };
    });
  },
};
