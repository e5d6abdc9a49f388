// Rank program that measures allreduce through the harness while corrupting one element of every
// result, to prove the `wrong` and `inplace_wrong` columns count what is wrong.
import { measureSweep } from "../../bench/harness.ts";
import { type Communicator, HostBuffer } from "../../mod.ts";

export async function run(comm: Communicator): Promise<number[]> {
  const allreduce = comm.allreduce.bind(comm);
  comm.allreduce = async (buf, options) => {
    await allreduce(buf, options);
    const out = options?.out ?? buf;
    const view = out instanceof HostBuffer ? out.view : out;
    view[view.length - 1] += 1;
  };
  const wrong: number[] = [];
  await measureSweep(comm, {
    primitive: "allreduce",
    transport: "shm",
    memory: "shared",
    algorithm: "auto",
    dtype: "f32",
    op: "sum",
    root: 0,
    counts: [1, 100, 5000],
    iters: 3,
    warmup: 0,
    timing: "back-to-back",
    inPlace: true,
    onResult: (r) => void wrong.push(r.row.wrong, r.row.inplace_wrong!),
  });
  return wrong;
}
