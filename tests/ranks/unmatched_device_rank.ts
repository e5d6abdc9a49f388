// Rank program for tests/gpu_test.ts: every rank sends a device message before receiving one, so
// on the gpu transport (a send completes when its receive takes it) no two ends ever meet; returns
// the error each rank's send gave.
import type { Communicator } from "../../mod.ts";
import { caught } from "./_caught.ts";

export async function run(comm: Communicator): Promise<unknown> {
  const buf = comm.alloc(4, { memory: "gpu" });
  const right = (comm.rank + 1) % comm.size, left = (comm.rank + comm.size - 1) % comm.size;
  return await caught(async () => {
    await comm.send(buf, right);
    await comm.recv(buf, left);
  });
}
