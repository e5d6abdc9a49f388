// Rank program for the kept-call test: the communicator keeps the last checked bcast, allreduce,
// reduce, allgather, reduceScatter, alltoall, gather, scatter and every v collective and reruns it
// when a call repeats it (primitives/communicator/collective_runner.ts), so this one calls them on
// the same buffers again and again, changing one argument at a time (op, out, root, a buffer or its
// length, avg, counts refilled in the same array), and checks every result. Returns the checks
// that failed, by name.
import type { Communicator } from "../../mod.ts";

export async function run(comm: Communicator): Promise<string[]> {
  const { rank, size } = comm;
  const failed: string[] = [];
  const expect = (name: string, got: ArrayLike<number>, want: number[]) => {
    if (Array.from(got).join() !== want.join()) {
      failed.push(`${name}: ${Array.from(got).slice(0, 16)} (${got.length} elements)`);
    }
  };
  const buf = comm.alloc(1).view, out = comm.alloc(1).view;
  const sum = (size * (size + 1)) / 2;
  for (let i = 0; i < 3; i++) {
    buf[0] = rank + 1;
    await comm.allreduce(buf);
    expect(`allreduce sum #${i}`, buf, [sum]);
  }
  buf[0] = rank + 1;
  await comm.allreduce(buf, { op: "max" });
  expect("allreduce max", buf, [size]);
  for (let i = 0; i < 2; i++) {
    buf[0] = rank + 1;
    await comm.allreduce(buf, { op: "avg" });
    expect(`allreduce avg #${i}`, buf, [sum / size]);
  }
  buf[0] = rank + 1;
  await comm.allreduce(buf, { out });
  expect("allreduce out: in", buf, [rank + 1]);
  expect("allreduce out: out", out, [sum]);
  // A view that tracks a resizable buffer changes length without changing identity.
  const growing = new Float32Array(new ArrayBuffer(4, { maxByteLength: 8 }));
  for (const length of [1, 1, 2]) {
    (growing.buffer as ArrayBuffer).resize(length * 4);
    growing.fill(rank + 1);
    await comm.allreduce(growing);
    expect(`allreduce of ${length} tracking`, growing, new Array(length).fill(sum));
  }
  for (const root of [0, 0, size - 1, 0]) {
    buf[0] = rank === root ? 10 + root : -1;
    await comm.bcast(buf, { root });
    expect(`bcast from ${root}`, buf, [10 + root]);
  }
  for (const root of [0, 0, size - 1]) {
    buf[0] = rank + 1;
    out[0] = -1;
    await comm.reduce(buf, { root, out });
    expect(`reduce to ${root}: in`, buf, [rank + 1]);
    expect(`reduce to ${root}: out`, out, [rank === root ? sum : -1]);
  }
  await twoBuffers(comm, expect);
  await alltoallvs(comm, expect);
  await rooted(comm, expect);
  await vCollectives(comm, expect);
  await movedBlocks(comm, expect);
  return failed;
}

type Expect = (name: string, got: ArrayLike<number>, want: number[]) => void;

/** allgather, reduceScatter and alltoall again and again, then with another recv or length. */
async function twoBuffers(comm: Communicator, expect: Expect): Promise<void> {
  const { rank, size } = comm;
  const ranks = [...Array(size).keys()];
  const send = comm.alloc(size).view, recv = comm.alloc(size).view, other = comm.alloc(size).view;
  const one = comm.alloc(1).view, two = comm.alloc(2 * size).view;
  for (let i = 0; i < 3; i++) {
    one[0] = 10 * i + rank;
    await comm.allgather(one, i < 2 ? recv : other);
    expect(`allgather #${i}`, i < 2 ? recv : other, ranks.map((r) => 10 * i + r));
  }
  two.fill(rank);
  await comm.allgather(two.subarray(2 * rank, 2 * rank + 2), two); // in place
  expect("allgather in place", two, ranks.flatMap((r) => [r, r]));
  for (let i = 0; i < 3; i++) {
    send.forEach((_, j) => send[j] = i + rank * j);
    await comm.reduceScatter(send, one, { op: i < 2 ? "sum" : "max" });
    const terms = ranks.map((r) => i + r * rank);
    expect(`reduceScatter #${i}`, one, [
      i < 2 ? terms.reduce((a, b) => a + b) : Math.max(...terms),
    ]);
  }
  for (let i = 0; i < 3; i++) {
    send.forEach((_, j) => send[j] = 100 * i + 10 * rank + j);
    const into = i < 2 ? recv : other;
    await comm.alltoall(send, into);
    expect(`alltoall #${i}`, into, ranks.map((r) => 100 * i + 10 * r + rank));
  }
}

/**
 * alltoallv with counts refilled in the same arrays between calls (a kept call must see them), and
 * one rank's send past the shm eager slot while the others' fit in it.
 */
async function alltoallvs(comm: Communicator, expect: Expect): Promise<void> {
  const { rank, size } = comm;
  const big = 5000; // floats: 20 kB, past a 16 KiB eager slot
  const send = comm.alloc(big * size).view, recv = comm.alloc(big * size).view;
  const sendCounts = new Array<number>(size), recvCounts = new Array<number>(size);
  // Call k: rank i sends rank j count(k, i, j) elements of value 1000 i + j.
  const count = (k: number, i: number, j: number) =>
    k % 3 === 2 ? (i === 0 ? big : 1) : ((i + j + k) % 3) + 1;
  for (let k = 0; k < 6; k++) {
    for (let j = 0; j < size; j++) {
      sendCounts[j] = count(k, rank, j);
      recvCounts[j] = count(k, j, rank);
    }
    let at = 0;
    for (let j = 0; j < size; j++) send.fill(1000 * rank + j, at, at += sendCounts[j]);
    recv.fill(-1);
    await comm.alltoallv(send, recv, { sendCounts, recvCounts });
    const want = recvCounts.flatMap((n, i) => new Array(n).fill(1000 * i + rank));
    const total = recvCounts.reduce((a, b) => a + b);
    expect(`alltoallv #${k}`, recv.subarray(0, total), want);
  }
}

/**
 * gather and scatter again and again, then to another root, into another buffer, and in place;
 * ranks other than the root pass no second buffer.
 */
async function rooted(comm: Communicator, expect: Expect): Promise<void> {
  const { rank, size } = comm;
  const ranks = [...Array(size).keys()];
  const one = comm.alloc(1).view, whole = comm.alloc(size).view, other = comm.alloc(size).view;
  const roots = [0, 0, size - 1, size - 1, 0];
  for (const [i, root] of roots.entries()) {
    const into = i === 3 ? other : whole;
    one[0] = 10 * i + rank;
    into.fill(-1);
    await comm.gather(one, rank === root ? into : undefined, { root });
    if (rank === root) expect(`gather #${i} to ${root}`, into, ranks.map((r) => 10 * i + r));
  }
  for (const [i, root] of roots.entries()) {
    const from = i === 3 ? other : whole;
    if (rank === root) from.forEach((_, j) => from[j] = 100 * i + j);
    one[0] = -1;
    await comm.scatter(rank === root ? from : undefined, one, { root });
    expect(`scatter #${i} from ${root}`, one, [100 * i + rank]);
  }
  const block = rank === 0 ? whole.subarray(0, 1) : one;
  for (let i = 0; i < 2; i++) {
    whole.fill(rank);
    if (rank === 0) whole[0] = 7 + i;
    one[0] = rank + i;
    await comm.gather(block, rank === 0 ? whole : undefined); // in place on the root
    if (rank === 0) expect(`gather in place #${i}`, whole, ranks.map((r) => r ? r + i : 7 + i));
  }
}

/**
 * allgatherv, gatherv, scatterv and reduceScatterv twice each with the same counts, then again
 * with the counts refilled in the same arrays: call k gives rank r `(r + k) % 3 + 1` elements.
 */
async function vCollectives(comm: Communicator, expect: Expect): Promise<void> {
  const { rank, size } = comm;
  const ranks = [...Array(size).keys()];
  const recvCounts = new Array<number>(size), sendCounts = new Array<number>(size);
  const whole = comm.alloc(3 * size).view, block = comm.alloc(3).view;
  for (let k = 0; k < 4; k++) {
    const n = (r: number) => (r + k) % 3 + 1;
    ranks.forEach((r) => recvCounts[r] = sendCounts[r] = n(r));
    const total = recvCounts.reduce((a, b) => a + b);
    // Views of this call's lengths, the same in both calls of a pair.
    const mine = block.subarray(0, n(rank)), packed = whole.subarray(0, total);
    const blocks = (f: (r: number) => number) => ranks.flatMap((r) => new Array(n(r)).fill(f(r)));
    const root = k % size;
    for (let again = 0; again < 2; again++) {
      const name = `#${k}.${again}`;
      mine.fill(10 * k + rank);
      packed.fill(-1);
      await comm.allgatherv(mine, packed, { recvCounts });
      expect(`allgatherv ${name}`, packed, blocks((r) => 10 * k + r));
      mine.fill(20 * k + rank);
      packed.fill(-1);
      await comm.gatherv(mine, rank === root ? packed : undefined, { root, recvCounts });
      if (rank === root) expect(`gatherv ${name}`, packed, blocks((r) => 20 * k + r));
      if (rank === root) packed.set(blocks((r) => 30 * k + r));
      mine.fill(-1);
      await comm.scatterv(rank === root ? packed : undefined, mine, { root, sendCounts });
      expect(`scatterv ${name}`, mine, new Array(n(rank)).fill(30 * k + rank));
      packed.fill(rank + k);
      await comm.reduceScatterv(packed, mine, { recvCounts });
      const sum = (size * (size - 1)) / 2 + size * k;
      expect(`reduceScatterv ${name}`, mine, new Array(n(rank)).fill(sum));
    }
  }
}

/**
 * allgatherv, gatherv and scatterv on the same buffers with the same counts, their displacements
 * refilled in the same array between calls (packed, then one element further on): only their
 * values tell the calls apart.
 */
async function movedBlocks(comm: Communicator, expect: Expect): Promise<void> {
  const { rank, size } = comm;
  const ranks = [...Array(size).keys()];
  const counts = ranks.map((r) => r % 2 + 1), displs = new Array<number>(size);
  const whole = comm.alloc(2 * size + 1).view, mine = comm.alloc(counts[rank]).view;
  for (let k = 0; k < 4; k++) {
    let at = k % 2;
    ranks.forEach((r) => (displs[r] = at, at += counts[r]));
    // What `whole` holds with block r filled with f(r) at displs[r], -1 elsewhere.
    const laid = (f: (r: number) => number) => {
      const want = new Array<number>(whole.length).fill(-1);
      ranks.forEach((r) => want.fill(f(r), displs[r], displs[r] + counts[r]));
      return want;
    };
    mine.fill(10 * k + rank);
    whole.fill(-1);
    await comm.allgatherv(mine, whole, { recvCounts: counts, recvDispls: displs });
    expect(`allgatherv moved #${k}`, whole, laid((r) => 10 * k + r));
    whole.fill(-1);
    await comm.gatherv(mine, rank === 0 ? whole : undefined, {
      recvCounts: counts,
      recvDispls: displs,
    });
    if (rank === 0) expect(`gatherv moved #${k}`, whole, laid((r) => 10 * k + r));
    if (rank === 0) whole.set(laid((r) => 20 * k + r));
    await comm.scatterv(rank === 0 ? whole : undefined, mine, {
      sendCounts: counts,
      sendDispls: displs,
    });
    expect(`scatterv moved #${k}`, mine, new Array(counts[rank]).fill(20 * k + rank));
  }
}
