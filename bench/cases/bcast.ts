/**
 * bcast: the root's inputs in every rank's buffer (nccl-tests' broadcast, in place).
 * @module
 */

import { alloc, collectiveFacts, head, prepared, whole } from "./_buffers.ts";
import { clear, writeInput, wrongInputs } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** bcast's case. */
export const BCAST: PrimitiveSpec = {
  ...collectiveFacts("bcast"),
  inPlace: false,
  busFactor: () => 1,
  work: (n) => ({ copy: n - 1, reduce: 0 }),
  busFormula: "1",
  footprint: (count) => count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const full = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [full], (count) => {
      const buf = head(full, count);
      // One options object per size, as a user's loop makes it: the timed loop allocates nothing.
      const options = { root: o.root, algorithm: o.algorithm };
      return {
        buffers: [buf],
        fill: () => rank === o.root ? writeInput(buf, o, rank, size) : clear(buf),
        run: () => comm.bcast(buf, options),
        wrong: () => wrongInputs(buf, o, o.root, size),
      };
    });
  },
};
