// Rank program where rank 1 allreduces one element more than the others.
import type { Communicator } from "../../mod.ts";

export async function run(comm: Communicator): Promise<void> {
  const buf = comm.alloc(1000 + (comm.rank === 1 ? 1 : 0), { memory: "host" });
  await comm.allreduce(buf, { algorithm: "ring" });
}
