/**
 * The case gather and scatter share (and gatherv and scatterv, with equal counts, as OSU times
 * them): a block on every rank, the whole on the root only (the other ranks pass none), in place
 * the root's block of its whole.
 * @module
 */

import { clearRecvFillSend, wrongInputs } from "../exact_inputs.ts";
import {
  BETWEEN_BLOCKS,
  blockCase,
  collectiveFacts,
  equalCounts,
  wrongBlocks,
} from "./_buffers.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** gather's case (`gathers`) or scatter's; their v forms' (`v`), with equal counts. */
export function rootedBlocks(gathers: boolean, v = false): PrimitiveSpec {
  return {
    ...collectiveFacts(gathers ? (v ? "gatherv" : "gather") : v ? "scatterv" : "scatter"),
    inPlace: true,
    ...BETWEEN_BLOCKS,
    // The root writes every block but its own (gather), or each rank but the root its block.
    work: (n) => ({ copy: (n - 1) / n, reduce: 0 }),
    prepare(comm, maxCount, o) {
      const { rank, size } = comm;
      const isRoot = rank === o.root;
      return blockCase(comm, maxCount, o, gathers, isRoot ? rank : undefined, (n, send, recv) => {
        const counts = equalCounts(n, size);
        const options = {
          root: o.root,
          algorithm: o.algorithm,
          recvCounts: counts,
          sendCounts: counts,
        };
        const block = gathers ? send : recv, whole = gathers ? recv : send;
        return {
          buffers: isRoot ? [send, recv] : [block],
          // The root's whole send (scatter) holds its inputs, elements 0 … size × n − 1.
          fill: () => clearRecvFillSend(send, recv, o, rank, size),
          run: gathers
            ? v
              ? () => comm.gatherv(send, isRoot ? recv : undefined, options)
              : () => comm.gather(send, isRoot ? recv : undefined, options)
            : v
            ? () => comm.scatterv(isRoot ? send : undefined, recv, options)
            : () => comm.scatter(isRoot ? send : undefined, recv, options),
          wrong: async () => {
            if (gathers) {
              return await wrongInputs(send, o, rank, size) +
                (isRoot ? await wrongBlocks(whole, n, size, o, (q) => [q, 0]) : 0);
            }
            // Rank r got block r of the root's inputs.
            return await wrongInputs(recv, o, o.root, size, rank * n) +
              (isRoot ? await wrongInputs(send, o, rank, size) : 0);
          },
        };
      });
    },
  };
}
