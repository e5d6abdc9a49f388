/**
 * reduceScatter and reduceScatterv: the reduction of every rank's whole buffer, block by block,
 * one block a rank; reduceScatterv with equal counts, as osu_reduce_scatter times it.
 * @module
 */

import { BETWEEN_BLOCKS, blockCase, collectiveFacts, equalCounts } from "./_buffers.ts";
import { clearRecvFillSend, wrongReducedIn } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** reduceScatter's case, or reduceScatterv's (`v`). */
function reduceScatterCase(v: boolean): PrimitiveSpec {
  return {
    ...collectiveFacts(v ? "reduceScatterv" : "reduceScatter"),
    inPlace: true,
    ...BETWEEN_BLOCKS,
    work: (n) => ({ copy: 0, reduce: n - 1 }), // n − 1 sums for each element of the blocks
    prepare(comm, maxCount, o) {
      const { rank, size } = comm;
      return blockCase(comm, maxCount, o, false, rank, (n, send, recv) => {
        const options = {
          op: o.op,
          algorithm: o.algorithm,
          reproducible: o.reproducible,
          recvCounts: equalCounts(n, size),
        };
        return {
          buffers: [send, recv],
          fill: () => clearRecvFillSend(send, recv, o, rank, size),
          run: v
            ? () => comm.reduceScatterv(send, recv, options)
            : () => comm.reduceScatter(send, recv, options),
          wrong: () => wrongReducedIn(recv, o, size, rank * n),
        };
      });
    },
  };
}

/** reduceScatter's case. */
export const REDUCE_SCATTER: PrimitiveSpec = reduceScatterCase(false);

/** reduceScatterv's case: equal counts. */
export const REDUCE_SCATTERV: PrimitiveSpec = reduceScatterCase(true);
