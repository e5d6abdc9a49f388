// Rank program for the correctness matrix: runs every case it is given and returns the wrong
// element counts (one per case), so the test sees every failure at once.
import { type CaseOptions, type Primitive, PRIMITIVES } from "../../bench/cases.ts";
import type { Communicator } from "../../core.ts";

export interface CheckCase extends CaseOptions {
  primitive: Primitive;
  count: number;
  /** Out-of-place runs twice to check that reused buffers and scratch stay correct. */
  repeat?: number;
  /** The primitive's in-place form. */
  inPlace?: boolean;
}

export async function run(comm: Communicator, cases: CheckCase[]): Promise<number[]> {
  const wrong: number[] = [];
  for (const c of cases) {
    const prepared = PRIMITIVES[c.primitive].prepare(comm, c.count, c);
    const sized = prepared.sized(c.count, c.inPlace);
    let w = 0;
    for (let k = 0; k < (c.repeat ?? 1); k++) {
      await sized.fill();
      await sized.run();
      w += await sized.wrong();
    }
    prepared.free();
    wrong.push(w);
  }
  return wrong;
}
