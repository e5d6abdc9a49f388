// Rank program that measures the point-to-point tests through the harness while corrupting the
// last element of every message received, to prove their `wrong` column counts what is wrong.
import { measureSweep } from "../../bench/harness.ts";
import type { Primitive } from "../../bench/cases.ts";
import { type Communicator, HostBuffer } from "../../mod.ts";

export async function run(comm: Communicator): Promise<Record<string, number[]>> {
  const recv = comm.recv.bind(comm);
  comm.recv = async (buf, peer, options) => {
    const from = await recv(buf, peer, options);
    const view = buf instanceof HostBuffer ? buf.view : buf;
    if (view.length > 1) view[view.length - 1] += 1; // a bw acknowledgement is one element
    return from;
  };
  const wrong: Record<string, number[]> = {};
  for (const primitive of ["latency", "bw", "bibw", "mbwMr"] as Primitive[]) {
    wrong[primitive] = [];
    await measureSweep(comm, {
      primitive,
      transport: "shm",
      memory: "shared",
      algorithm: "auto",
      dtype: "f32",
      op: "sum",
      root: 0,
      counts: [2, 100],
      iters: 2,
      warmup: 0,
      timing: "back-to-back",
      inPlace: false,
      window: 3,
      onResult: (r) => void wrong[primitive].push(r.row.wrong),
    });
  }
  return wrong;
}
