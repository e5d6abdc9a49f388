// Rank program for tests/faults_test.ts: `mode` picks the fault or the mismatch to stage.
import { type Communicator } from "../../mod.ts";
import { TRANSPORT_TABLE } from "../../deno/transport_table.ts";
import { launchGroup } from "../../deno/launch/group.ts";
import { Communicator as CommunicatorClass } from "../../primitives/communicator/communicator.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";
import { RankMemory } from "../../primitives/memory/rank_memory.ts";

export type FaultMode =
  | "survive" // rank 1 throws mid-ring; the others catch, then join a new group of two
  | "throw-on-1" // rank 1 throws between allreduces
  | "loop" // allreduce forever (a test stops or kills a rank)
  | "straggle" // rank 1 never returns after the last collective
  | "bcast-vs-allreduce"
  | "bcast-roots"
  | "reduce-roots"
  | "dtypes"
  | "ops"
  | "algorithms"
  // Pipelined (small) bcast and reduce on shm: writers return before anyone reads.
  | "small-bcast-roots" // caught at the next arrival (the barrier below)
  | "small-bcast-roots-last" // the last call: caught when the communicators close
  | "small-reduce-roots" // caught by the reading roots
  | "small-bcast-vs-allreduce"; // caught by the ranks waiting for the finished root

export interface FaultArgs {
  mode: FaultMode;
  /** ws survivors: a folder where the new group's rank 0 leaves its port (a file store). */
  store?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(comm: Communicator, { mode, store }: FaultArgs): Promise<unknown> {
  const host = TRANSPORT_TABLE.facts(comm.transport).bestMemory;
  const buf = comm.alloc(1 << 18, { memory: host });
  switch (mode) {
    case "survive": {
      let caught: string;
      try {
        for (let i = 0;; i++) {
          if (comm.rank === 1 && i === 3) throw new Error("boom from rank 1");
          await comm.allreduce(buf, { algorithm: messageRing(comm) });
        }
      } catch (e) {
        if (comm.rank === 1) throw e;
        caught = `${(e as Error).name}: ${(e as Error).message}`;
      }
      // Stray rejections of the failed call would crash this rank about now.
      await sleep(200);
      let later: string;
      try {
        await comm.allreduce(buf);
        later = "no error";
      } catch (e) {
        later = (e as Error).name;
      }
      return { caught, later, sum: await newGroupSum(comm, store) };
    }
    case "throw-on-1":
      for (let i = 0;; i++) {
        if (comm.rank === 1 && i === 20) throw new Error("boom from rank 1");
        await comm.allreduce(buf, { algorithm: messageRing(comm) });
      }
    case "loop":
      // Says so once the group runs its loop (a test waits for it rather than for a fixed time).
      await comm.allreduce(buf);
      console.log("looping");
      for (;;) await comm.allreduce(buf);
    case "straggle":
      await comm.allreduce(buf);
      if (comm.rank === 1) { for (;;) await sleep(1000); }
      return "done";
    case "bcast-vs-allreduce":
      if (comm.rank === 0) await comm.bcast(buf);
      else await comm.allreduce(buf);
      break;
    case "bcast-roots":
      await comm.bcast(buf, { root: comm.rank === 0 ? 0 : 1 });
      break;
    case "reduce-roots":
      await comm.reduce(buf, { root: comm.rank === 0 ? 0 : 1 });
      break;
    case "dtypes": {
      const typed = comm.alloc(1000, { memory: host, dtype: comm.rank === 0 ? "i32" : "f32" });
      await comm.allreduce(typed);
      break;
    }
    case "ops":
      await comm.allreduce(buf, { op: comm.rank === 0 ? "max" : "sum" });
      break;
    case "small-bcast-roots":
    case "small-bcast-roots-last":
      await comm.bcast(comm.alloc(1, { memory: host }), { root: comm.rank === 0 ? 0 : 1 });
      if (mode === "small-bcast-roots-last") return "completed";
      break;
    case "small-reduce-roots":
      await comm.reduce(comm.alloc(1, { memory: host }), { root: comm.rank === 0 ? 0 : 1 });
      break;
    case "small-bcast-vs-allreduce": {
      const one = comm.alloc(1, { memory: host });
      if (comm.rank === 0) await comm.bcast(one);
      else await comm.allreduce(one);
      return "completed";
    }
    case "algorithms": {
      const [one, other] = comm.transport === "gpu"
        ? ["gpu_ring", "gpu_direct"]
        : ["ring", "recursive_doubling"];
      await comm.allreduce(buf, { algorithm: comm.rank === 0 ? one : other });
      break;
    }
  }
  // A mismatch a rank did not see in its own call shows by the next one at the latest.
  await comm.barrier();
  return "completed";
}

/** The ring over message transports (its promises are many), else `auto`. */
function messageRing(comm: Communicator): string {
  return comm.transport === "shm" || comm.transport === "gpu" ? "auto" : "ring";
}

/**
 * The survivors' new communicator: worker ranks start a fresh group of their own; process ranks
 * form one over their transport, rank 0 leaving its port in `store` for the others.
 */
async function newGroupSum(comm: Communicator, store?: string): Promise<number> {
  const facts = TRANSPORT_TABLE.facts(comm.transport);
  if (facts.launch !== "processes") {
    const sums = await launchGroup<number>(new URL("./sum_rank.ts", import.meta.url), {
      size: 2,
      transport: facts.name,
    }).results;
    return sums[0];
  }
  const survivors = [0, 2];
  const rank = survivors.indexOf(comm.rank);
  const portFile = `${store}/port`;
  const transport = await TRANSPORT_TABLE.launchedAs(comm.transport, "processes").connect({
    rank,
    size: survivors.length,
    masterAddr: "127.0.0.1",
    masterPort: rank === 0 ? 0 : await readPort(portFile),
    token: Deno.env.get("DCCL_TOKEN")!,
    timeoutMs: 5000,
    onListening: (port: number) => rank === 0 && Deno.writeTextFileSync(portFile, String(port)),
  });
  await using fresh = new CommunicatorClass(
    transport,
    new RankMemory(new RankHeap(createHeapMemory())),
  );
  const one = Float32Array.of(fresh.rank + 1);
  await fresh.allreduce(one);
  return one[0];
}

async function readPort(file: string): Promise<number> {
  for (;;) {
    try {
      const text = Deno.readTextFileSync(file);
      if (/^\d+$/.test(text)) return Number(text);
    } catch { /* not written yet */ }
    await sleep(20);
  }
}
