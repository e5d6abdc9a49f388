// Rank program that allreduces forever (until a peer dies), for the killed-process tests; it
// says "looping" once the group runs the loop (tests wait for it instead of a fixed time).
import type { Communicator } from "../../mod.ts";

export async function run(comm: Communicator): Promise<void> {
  const buf = comm.alloc(1 << 16, { memory: "host" });
  await comm.allreduce(buf);
  console.log("looping");
  for (;;) await comm.allreduce(buf);
}
