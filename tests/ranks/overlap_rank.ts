// Rank program for tests/overlap_test.ts: issues every case at once (none awaited before the
// next is issued), twice over the same buffers, and returns each case's wrong elements.
import { PRIMITIVES } from "../../bench/cases.ts";
import type { Communicator } from "../../mod.ts";
import type { CheckCase } from "./check_rank.ts";

export async function run(comm: Communicator, cases: CheckCase[]): Promise<number[]> {
  const prepared = cases.map((c) => PRIMITIVES[c.primitive].prepare(comm, c.count, c));
  const sized = prepared.map((p, i) => p.sized(cases[i].count));
  const wrong = cases.map(() => 0);
  for (let round = 0; round < 2; round++) {
    for (const s of sized) await s.fill();
    await Promise.all(sized.map((s) => s.run()));
    for (let i = 0; i < sized.length; i++) wrong[i] += await sized[i].wrong();
  }
  prepared.forEach((p) => p.free());
  return wrong;
}
