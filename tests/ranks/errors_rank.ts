// Rank program for the error tests. `mode` picks the misbehaviour; argument errors are caught and
// returned so the test can check type and message on every rank.
import type { Communicator } from "../../mod.ts";

type Mode =
  | "bad-arguments"
  | "count-mismatch"
  | "throw-mid-allreduce"
  | "loop-allreduce"
  | "skip-collective";

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

export async function run(comm: Communicator, mode: Mode): Promise<unknown> {
  const buf = comm.alloc(16);
  switch (mode) {
    case "bad-arguments":
      return {
        root: await caughtAsync(() => comm.bcast(buf, { root: comm.size + 1 })),
        peer: await caughtAsync(() => comm.send(buf, comm.size)),
        tag: await caughtAsync(() => comm.send(buf, (comm.rank + 1) % comm.size, { tag: -1 })),
        count: caught(() => comm.alloc(2 ** 29)),
        dtype: await caughtAsync(() =>
          comm.allreduce(buf, { out: comm.alloc(16, { dtype: "f64" }) })
        ),
        outLength: await caughtAsync(() => comm.allreduce(buf, { out: comm.alloc(15) })),
        algorithm: await caughtAsync(() => comm.allreduce(buf, { algorithm: "bogus" })),
        op: await caughtAsync(() => comm.allreduce(buf, { op: "xor" as "sum" })),
        memory: caught(() => comm.alloc(4, { memory: "gpu" })),
        allgather: await caughtAsync(() => comm.allgather(buf, comm.alloc(17))),
      };
    case "count-mismatch": {
      const mine = comm.alloc(comm.rank === 0 ? 1000 : 999);
      await comm.allreduce(mine, { algorithm: "ring" });
      return "completed";
    }
    case "throw-mid-allreduce":
      for (let i = 0;; i++) {
        if (comm.rank === 1 && i === 50) throw new Error("boom from rank 1");
        await comm.allreduce(buf);
      }
    case "loop-allreduce":
      for (;;) await comm.allreduce(buf);
    case "skip-collective":
      if (comm.rank !== 2) await comm.allreduce(buf, { algorithm: "ring" });
      return "done";
  }
}
