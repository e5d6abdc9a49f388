// Rank program for the kept-call test: the communicator keeps the last checked bcast, allreduce
// and reduce and reruns it when a call repeats it (primitives/communicator/communicator.ts), so this one calls
// them on the same buffers again and again, changing one argument at a time (op, out, root, the
// buffer's length, avg), and checks every result. Returns the checks that failed, by name.
import type { Communicator } from "../../mod.ts";

export async function run(comm: Communicator): Promise<string[]> {
  const { rank, size } = comm;
  const failed: string[] = [];
  const expect = (name: string, got: ArrayLike<number>, want: number[]) => {
    if (Array.from(got).join() !== want.join()) failed.push(`${name}: ${Array.from(got)}`);
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
  return failed;
}
