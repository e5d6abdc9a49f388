// Rank program that allreduces forever (until a peer dies), for the killed-process test.
import type { Communicator } from "../../mod.ts";

export async function run(comm: Communicator): Promise<void> {
  const buf = comm.alloc(1 << 16, { memory: "host" });
  for (;;) await comm.allreduce(buf);
}
