// Rank program for tests/hazard_test.ts: each scenario issues calls whose buffers overlap (the
// same buffer twice, partial overlaps, a send's buffer received into), once awaiting each call in
// turn and once all in flight together, from the same inputs, and returns per scenario the
// elements of its buffers that differ between the two runs (0: the overlapped calls gave the
// issue-order result).
import type { CommBuffer, Communicator, MemoryKind } from "../../mod.ts";

export interface HazardArgs {
  memory: MemoryKind;
  /** Elements per block; buffers hold two blocks. */
  count: number;
  scenarios: string[];
}

interface Buffers {
  a: CommBuffer;
  b: CommBuffer;
  c: CommBuffer;
}

type Call = () => Promise<unknown>;

/** Each scenario's calls, in issue order, on buffers of 2 × `n` elements. */
export const SCENARIOS: Record<string, (comm: Communicator, x: Buffers, n: number) => Call[]> = {
  "allreduce twice": (comm, { a }) => [() => comm.allreduce(a), () => comm.allreduce(a)],
  "allreduce sum then prod": (comm, { a }) => [
    () => comm.allreduce(a),
    () => comm.allreduce(a, { op: "prod" }),
  ],
  "allreduce then bcast": (comm, { a }) => [
    () => comm.allreduce(a),
    () => comm.bcast(a, { root: comm.size - 1 }),
  ],
  "bcast then allreduce out of place": (comm, { a, b }) => [
    () => comm.bcast(a, { root: 1 % comm.size }),
    () => comm.allreduce(a, { out: b }),
    () => comm.allreduce(b, { op: "max" }),
  ],
  "reduce then allreduce": (comm, { a }) => [
    () => comm.reduce(a, { root: comm.size - 1 }),
    () => comm.allreduce(a, { op: "max" }),
  ],
  "allgather then reduce-scatter": (comm, { a, b }, n) => {
    const block = Math.floor(n / comm.size);
    const whole = b.subarray(0, block * comm.size), mine = a.subarray(0, block);
    return [() => comm.allgather(mine, whole), () => comm.reduceScatter(whole, mine)];
  },
  "alltoall there and back": (comm, { a, b }, n) => {
    const len = Math.floor(n / comm.size) * comm.size;
    const s = a.subarray(0, len), r = b.subarray(0, len);
    return [() => comm.alltoall(s, r), () => comm.alltoall(r, s)];
  },
  "gather then scatter": (comm, { a, b }, n) => {
    const block = Math.floor(n / comm.size);
    const root = comm.size - 1, isRoot = comm.rank === root;
    const whole = b.subarray(0, block * comm.size), mine = a.subarray(0, block);
    return [
      () => comm.gather(mine, isRoot ? whole : undefined, { root }),
      () => comm.allreduce(mine),
      () => comm.scatter(isRoot ? whole : undefined, mine, { root }),
    ];
  },
  "partial overlap": (comm, { a }, n) => [
    () => comm.allreduce(a.subarray(0, n)),
    () => comm.allreduce(a.subarray(n >> 1, n + (n >> 1)), { op: "prod" }),
    () => comm.bcast(a.subarray(n - 1, n + 1), { root: 0 }),
  ],
  // Pairs of ranks exchange (a send completes when its receive takes it on the gpu transport, as
  // MPI_Ssend may: the even rank of a pair sends first, the odd one receives first).
  "send buffer received into": (comm, { a, c }) => {
    const peer = comm.rank ^ 1, even = comm.rank % 2 === 0;
    const exchange: Call[] = peer >= comm.size
      ? []
      : even
      ? [() => comm.send(a, peer), () => comm.recv(a, peer), () => comm.send(a, peer, { tag: 1 })]
      : [() => comm.recv(c, peer), () => comm.send(a, peer), () => comm.recv(a, peer, { tag: 1 })];
    return [...exchange, () => comm.allreduce(a)];
  },
  "received buffer reduced and sent on": (comm, { a, b, c }) => {
    const peer = comm.rank ^ 1, even = comm.rank % 2 === 0;
    const exchange: Call[] = peer >= comm.size
      ? []
      : even
      ? [() => comm.send(c, peer), () => comm.recv(c, peer, { tag: 1 })]
      : [() => comm.recv(b, peer), () => comm.send(b, peer, { tag: 1 })];
    return [
      () => comm.allreduce(a, { out: c }),
      ...exchange,
      () => comm.allreduce(c, { op: "max" }),
      () => comm.allreduce(b, { op: "prod" }),
    ];
  },
  "disjoint buffers": (comm, { a, b, c }) => [
    () => comm.allreduce(a),
    () => comm.allreduce(b, { op: "max" }),
    () => comm.bcast(c, { root: 0 }),
  ],
};

/** Small integers (exact in every dtype and op here), different per rank and element. */
function inputs(rank: number, length: number, salt: number): Float32Array {
  return Float32Array.from({ length }, (_, i) => 1 + ((rank * 7 + i * 3 + salt) % 3));
}

export async function run(comm: Communicator, args: HazardArgs): Promise<number[]> {
  const length = 2 * args.count;
  const alloc = () => comm.alloc(length, { memory: args.memory });
  const bufs: Buffers = { a: alloc(), b: alloc(), c: alloc() };
  const fill = async () => {
    await bufs.a.write(inputs(comm.rank, length, 0));
    await bufs.b.write(inputs(comm.rank, length, 1));
    await bufs.c.write(inputs(comm.rank, length, 2));
  };
  const contents = async () => {
    const out = new Float32Array(3 * length);
    await bufs.a.read(out.subarray(0, length));
    await bufs.b.read(out.subarray(length, 2 * length));
    await bufs.c.read(out.subarray(2 * length));
    return out;
  };
  const differ: number[] = [];
  for (const name of args.scenarios) {
    await fill();
    for (const call of SCENARIOS[name](comm, bufs, args.count)) await call();
    const inTurn = await contents();
    await fill();
    await comm.barrier();
    await Promise.all(SCENARIOS[name](comm, bufs, args.count).map((call) => call()));
    const together = await contents();
    differ.push(inTurn.filter((v, i) => !Object.is(v, together[i])).length);
  }
  for (const b of Object.values(bufs)) comm.free(b);
  return differ;
}
