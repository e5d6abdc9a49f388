// Rank program for the device error tests: argument errors on the gpu transport, returned so the
// test checks type and message; on a rank without a device, the error of allocating gpu memory.
import type { Communicator } from "../../mod.ts";

function caught(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "no error";
}

async function caughtAsync(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "no error";
}

export async function run(comm: Communicator): Promise<unknown> {
  if (comm.transport !== "gpu") return caught(() => comm.alloc(4, { memory: "gpu" }));
  const gpu = comm.alloc(4, { memory: "gpu" });
  return {
    f64: caught(() => comm.alloc(4, { memory: "gpu", dtype: "f64" })),
    shared: caught(() => comm.alloc(4, { memory: "shared" })),
    mixed: await caughtAsync(() => comm.allreduce(gpu, { out: comm.alloc(4, { memory: "host" }) })),
    algorithm: await caughtAsync(() => comm.allreduce(gpu, { algorithm: "ring" })),
  };
}
