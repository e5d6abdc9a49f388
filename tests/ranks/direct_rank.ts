// Rank program for shm's direct messages (a large message in its sender's heap, copied once by its
// receiver): an exchange both ways at once; a receiver that comes late, while the sender overwrites
// its buffer as soon as its send resolves; and large and small messages in turn, which must arrive
// in order. Returns the problems found (none: an empty list).
import type { Communicator } from "../../mod.ts";

/** Floats of a large message: above shm's direct threshold (1 MiB), and not a multiple of a slot. */
const LARGE = (1 << 18) + 1001;

export async function run(comm: Communicator): Promise<string[]> {
  const problems: string[] = [];
  const peer = 1 - comm.rank;
  const out = comm.alloc(LARGE, { memory: "shared" }).view;
  const into = comm.alloc(LARGE, { memory: "shared" }).view;
  const expect = (what: string, got: ArrayLike<number>, value: (i: number) => number) => {
    const i = Array.from(got).findIndex((v, j) => v !== value(j));
    if (i >= 0) problems.push(`${what}: element ${i} is ${got[i]}, not ${value(i)}`);
  };

  // Both ways at once.
  out.forEach((_, i) => out[i] = comm.rank * 1e6 + i);
  await Promise.all([comm.send(out, peer), comm.recv(into, peer)]);
  expect("exchange", into, (i) => peer * 1e6 + i);

  // A late receiver: the send resolves only once the bytes are copied out.
  if (comm.rank === 0) {
    out.fill(7);
    await comm.send(out, 1);
    out.fill(-1);
  } else {
    await new Promise((r) => setTimeout(r, 100));
    await comm.recv(into, 0);
    expect("late receive", into, () => 7);
  }

  // Large, small, large: in order, on one tag.
  const small = comm.alloc(3, { memory: "shared" }).view;
  if (comm.rank === 0) {
    for (const [k, buf] of [[1, out], [2, small], [3, out]] as const) {
      buf.fill(k);
      await comm.send(buf, 1);
    }
  } else {
    for (const [k, buf] of [[1, into], [2, small], [3, into]] as const) {
      await comm.recv(buf, 0);
      expect(`message ${k}`, buf, () => k);
    }
  }
  return problems;
}
