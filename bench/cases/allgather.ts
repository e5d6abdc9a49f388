/**
 * allgather and allgatherv: every rank's block in every rank's whole buffer (in place: a rank's
 * own block); allgatherv with equal counts, as osu_allgatherv times it.
 * @module
 */

import {
  BETWEEN_BLOCKS,
  blockCase,
  collectiveFacts,
  equalCounts,
  wrongBlocks,
} from "./_buffers.ts";
import { clearRecvFillSend } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** allgather's case, or allgatherv's (`v`). */
function allgatherCase(v: boolean): PrimitiveSpec {
  return {
    ...collectiveFacts(v ? "allgatherv" : "allgather"),
    inPlace: true,
    ...BETWEEN_BLOCKS,
    work: (n) => ({ copy: n - 1, reduce: 0 }), // each rank writes all blocks but its own
    prepare(comm, maxCount, o) {
      const { rank, size } = comm;
      return blockCase(comm, maxCount, o, true, rank, (n, send, recv) => {
        const options = { algorithm: o.algorithm, recvCounts: equalCounts(n, size) };
        return {
          buffers: [send, recv],
          fill: () => clearRecvFillSend(send, recv, o, rank, size),
          run: v
            ? () => comm.allgatherv(send, recv, options)
            : () => comm.allgather(send, recv, options),
          wrong: () => wrongBlocks(recv, n, size, o, (r) => [r, 0]),
        };
      });
    },
  };
}

/** allgather's case. */
export const ALLGATHER: PrimitiveSpec = allgatherCase(false);

/** allgatherv's case: equal counts. */
export const ALLGATHERV: PrimitiveSpec = allgatherCase(true);
