// Rank program for the device error tests: argument errors on the gpu transport, returned so the
// test checks type and message; on a rank without a device, the error of allocating gpu memory.
import type { Communicator, GpuBuffer } from "../../mod.ts";
import { caught } from "./_caught.ts";

/** Rank 0's device buffer, for rank 1 to misuse (the logical ranks share this module). */
let rank0Buffer: GpuBuffer | undefined;

export async function run(comm: Communicator): Promise<unknown> {
  if (comm.transport !== "gpu") return caught(() => comm.alloc(4, { memory: "gpu" }));
  const gpu = comm.alloc(4, { memory: "gpu" }) as GpuBuffer;
  if (comm.rank === 0) rank0Buffer = gpu;
  await comm.barrier();
  return {
    f64: await caught(() => comm.alloc(4, { memory: "gpu", dtype: "f64" })),
    shared: await caught(() => comm.alloc(4, { memory: "shared" })),
    foreign: comm.rank === 1 ? await caught(() => comm.allreduce(rank0Buffer!)) : "rank 0's own",
    mixed: await caught(() => comm.allreduce(gpu, { out: comm.alloc(4, { memory: "host" }) })),
    algorithm: await caught(() => comm.allreduce(gpu, { algorithm: "ring" })),
  };
}
