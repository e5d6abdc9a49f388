// Rank program for the half-precision device test: 16-bit elements written, read and copied at
// odd element offsets keep their neighbours, and the device's reduce and scale give the host
// kernels' bits (values off the integer grid: rounding, ties, infinities). It runs in a rank
// worker so that its WebGPU device is torn down by the launcher (tests/_gpu.ts).
import type { Communicator } from "../../mod.ts";
import { assertEquals } from "../_assert.ts";
import { GpuBuffer } from "../../primitives/memory/gpu.ts";
import { divideReference, reduceReference } from "../../kernels/reduce_reference.ts";
import { setValues } from "../../kernels/elements.ts";
import { DTYPE_INFO, KERNEL_OPS, type TypedArray } from "../../primitives/types.ts";

/** Normal values with fraction bits past either type's, and the largest finite ones doubled. */
function values(n: number, salt: number): number[] {
  return Array.from({ length: n }, (_, i) => {
    if ((i + salt) % 11 === 5) return (i % 2 ? -1 : 1) * 60000;
    return ((i * 7919 + salt * 104729) % 2001 - 1000) / 37 + (i % 5) / 1024;
  });
}

export async function run(comm: Communicator): Promise<void> {
  const gpu = comm.gpu!;
  for (const dtype of ["f16", "bf16"] as const) {
    const array = DTYPE_INFO[dtype].array;
    const read = async (buf: GpuBuffer) => {
      const out = new array(buf.length) as TypedArray;
      await buf.read(out);
      return Array.from(out);
    };
    // Writes and reads at odd offsets and odd lengths leave the neighbours alone.
    const buf = GpuBuffer.alloc(gpu, dtype, 11);
    await buf.write(new array(11).fill(0x1111) as TypedArray);
    await buf.subarray(3, 6).write(new array([1, 2, 3] as number[]) as TypedArray);
    await buf.subarray(10).write(new array([9] as number[]) as TypedArray);
    assertEquals(
      await read(buf),
      [0x1111, 0x1111, 0x1111, 1, 2, 3, 0x1111, 0x1111, 0x1111, 0x1111, 9].map(
        (v) => dtype === "f16" ? Math.f16round(v) : v,
      ),
      `${dtype}: writes`,
    );
    assertEquals(
      await read(buf.subarray(5, 8)),
      (await read(buf)).slice(5, 8),
      `${dtype}: odd read`,
    );
    // A copy within one buffer from an odd to an even element leaves the rest as it was.
    const before = await read(buf);
    gpu.kernels.copy(gpu.encoder(), buf.subarray(3, 6), buf.subarray(6, 9));
    assertEquals(
      await read(buf),
      [...before.slice(0, 6), ...before.slice(3, 6), ...before.slice(9)],
      `${dtype}: copy`,
    );
    buf.destroy();

    // Reduce and scale: the device's bits equal the host reference's.
    for (const n of [1, 2, 7, 1001]) {
      for (const op of KERNEL_OPS) {
        const a = new array(n + 1) as TypedArray, b = new array(n + 1) as TypedArray;
        setValues(a, values(n + 1, 1));
        setValues(b, values(n + 1, 2));
        const da = GpuBuffer.alloc(gpu, dtype, n + 1), db = GpuBuffer.alloc(gpu, dtype, n + 1);
        await da.write(a);
        await db.write(b);
        // Operands at element 1: half-way into a word.
        const x = da.subarray(1), y = db.subarray(1);
        gpu.kernels.reduce(gpu.encoder(), op, [x], [x, y]);
        const want = new array(n) as TypedArray;
        reduceReference(op, want, a.subarray(1), b.subarray(1));
        assertEquals(await read(x), Array.from(want), `${dtype} ${op} n=${n}`);
        gpu.kernels.scale(gpu.encoder(), x, 3);
        divideReference(want, 3);
        assertEquals(await read(x), Array.from(want), `${dtype} ${op} n=${n} / 3`);
        da.destroy();
        db.destroy();
      }
    }
  }
}
