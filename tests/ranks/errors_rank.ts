// Rank program for the error tests. `mode` picks the misbehaviour; argument errors are caught and
// returned so the test can check type and message on every rank.
import { Communicator } from "../../primitives/communicator/communicator.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";
import { RankMemory } from "../../primitives/memory/rank_memory.ts";
import { WorkerTransport } from "../../primitives/transports/worker.ts";
import { caught } from "./_caught.ts";

/** A typed array whose memory was transferred away. */
function detached(): Float32Array {
  const view = new Float32Array(16);
  structuredClone(view.buffer, { transfer: [view.buffer] });
  return view;
}

/** A second communicator in this rank: rank 0 of a group of its own. */
function otherCommunicator(): Communicator {
  const memory = new RankMemory(new RankHeap(createHeapMemory()));
  return new Communicator(new WorkerTransport(0, [undefined]), memory);
}

type Mode =
  | "bad-arguments"
  | "count-mismatch"
  | "throw-mid-allreduce"
  | "loop-allreduce"
  | "skip-collective"
  | "alone";

export async function run(comm: Communicator, mode: Mode): Promise<unknown> {
  const buf = comm.alloc(16);
  switch (mode) {
    case "alone":
      return {
        send: await caught(() => comm.send(buf, 1)),
        recv: await caught(() => comm.recv(buf, 0)),
        any: await caught(() => comm.recv(buf, "any")),
      };
    case "bad-arguments":
      return {
        root: await caught(() => comm.bcast(buf, { root: comm.size + 1 })),
        peer: await caught(() => comm.send(buf, comm.size)),
        tag: await caught(() => comm.send(buf, (comm.rank + 1) % comm.size, { tag: -1 })),
        count: await caught(() => comm.alloc(2 ** 29)),
        dtype: await caught(() => comm.allreduce(buf, { out: comm.alloc(16, { dtype: "f64" }) })),
        outLength: await caught(() => comm.allreduce(buf, { out: comm.alloc(15) })),
        algorithm: await caught(() => comm.allreduce(buf, { algorithm: "bogus" })),
        op: await caught(() => comm.allreduce(buf, { op: "xor" as "sum" })),
        memory: await caught(() => comm.alloc(4, { memory: "gpu" })),
        allgather: await caught(() => comm.allgather(buf, comm.alloc(17))),
        alltoall: await caught(() => comm.alltoall(buf, comm.alloc(15))),
        gatherRecv: await caught(() => comm.gather(buf, undefined, { root: comm.rank })),
        gatherLength: await caught(() => comm.gather(buf, comm.alloc(16), { root: comm.rank })),
        scatterSend: await caught(() => comm.scatter(undefined, buf, { root: comm.rank })),
        scatterRoot: await caught(() => comm.scatter(buf, buf, { root: -1 })),
        nothing: await caught(() => comm.allreduce(null as unknown as Float32Array)),
        array: await caught(() => comm.allreduce([1, 2] as unknown as Float32Array)),
        overlap: await caught(() =>
          comm.allreduce(buf.subarray(0, 8), { out: buf.subarray(4, 12) })
        ),
        alltoallInPlace: await caught(() => comm.alltoall(buf, buf)),
        allgatherBlock: await caught(() => {
          const next = (comm.rank + 1) % comm.size;
          return comm.allgather(buf.subarray(4 * next, 4 * next + 4), buf);
        }),
        detached: await caught(() => comm.allreduce(detached())),
        foreign: await caught(async () => {
          await using other = otherCommunicator();
          await other.allreduce(buf);
        }),
        closed: await caught(async () => {
          const other = otherCommunicator();
          await other[Symbol.asyncDispose]();
          other.alloc(4);
        }),
        // None of these broke the communicator.
        after: await caught(() => comm.allreduce(buf)),
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
