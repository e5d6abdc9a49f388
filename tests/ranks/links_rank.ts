// Rank program: the link costs the group measured and the algorithms `auto` ran with them at
// several sizes, after an allreduce and a large bcast that must be exact; returned, and printed as
// one JSON line where links were measured (the env ranks of links_test.ts report on stdout).
import type { Communicator } from "../../mod.ts";
import type { LinkCosts } from "../../primitives/types.ts";

export const PICK_BYTES = [4, 4096, 1 << 18, 1 << 22];

export interface LinksReport {
  rank: number;
  links: LinkCosts | null;
  picks: string[][];
  exact: boolean;
}

export async function run(comm: Communicator): Promise<LinksReport> {
  const sum = Float32Array.of(comm.rank + 1);
  await comm.allreduce(sum);
  const big = new Float32Array(1 << 20).fill(comm.rank === 0 ? 7 : 0);
  await comm.bcast(big, { root: 0 });
  const picks: string[][] = [];
  for (const collective of ["allreduce", "bcast", "reduce"] as const) {
    const ran: string[] = [];
    for (const bytes of PICK_BYTES) {
      const buf = new Float32Array(bytes / 4);
      await comm[collective](buf, { root: 0 });
      ran.push(comm.lastAlgorithm(collective)!);
    }
    picks.push(ran);
  }
  const exact = sum[0] === (comm.size * (comm.size + 1)) / 2 && big.every((x) => x === 7);
  const report = { rank: comm.rank, links: comm.links ?? null, picks, exact };
  if (comm.links) console.log(JSON.stringify(report));
  return report;
}
