// Rank program for the half-precision device test: 16-bit elements written, read and copied at
// odd element offsets keep their neighbours, and the device's reduce and scale give the host
// kernels' values (off the integer grid: rounding, ties, overflow, infinities, NaN, f16
// subnormals), eight at a time on aligned views and word by word at odd offsets and in tails. It
// runs in a rank worker so that its WebGPU device is torn down by the launcher (tests/_gpu.ts).
import type { Communicator } from "../../mod.ts";
import { assertEquals } from "../_assert.ts";
import { GpuBuffer } from "../../primitives/memory/gpu_memory.ts";
import { divideReference, reduceReference } from "../../kernels/reduce_reference.ts";
import { setValues, valuesOf } from "../../kernels/elements.ts";
import { DTYPE_INFO, KERNEL_OPS, type TypedArray } from "../../primitives/types.ts";

/** Past both types' edges; f16's subnormals only (a device may flush f32's, bf16's). */
const SPECIAL = [Infinity, -Infinity, NaN, 0, -0, 6e-5, 1e-7, -3e-8];

/**
 * Normal values with fraction bits past either type's, the largest finite ones doubled, and now
 * and then a special one.
 */
function values(n: number, salt: number): number[] {
  return Array.from({ length: n }, (_, i) => {
    if ((i + salt) % 11 === 5) return (i % 2 ? -1 : 1) * 60000;
    if ((i * 3 + salt) % 17 === 4) return SPECIAL[(i + salt) % SPECIAL.length];
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

    // Reduce and scale: the device's values equal the host reference's (NaN payloads aside).
    const valuesRead = async (buf: GpuBuffer) => {
      const out = new array(buf.length) as TypedArray;
      await buf.read(out);
      return valuesOf(out);
    };
    for (const at of [0, 1]) { // element 0: eight at a time; element 1: half-way into a word
      for (const n of [1, 2, 7, 16, 1001]) {
        for (const op of KERNEL_OPS) {
          const what = `${dtype} ${op} n=${n} at ${at}`;
          const a = new array(n + at) as TypedArray, b = new array(n + at) as TypedArray;
          setValues(a, values(n + at, 1));
          setValues(b, values(n + at, 2));
          const da = GpuBuffer.alloc(gpu, dtype, n + at), db = GpuBuffer.alloc(gpu, dtype, n + at);
          await da.write(a);
          await db.write(b);
          const x = da.subarray(at), y = db.subarray(at);
          gpu.kernels.reduce(gpu.encoder(), op, [x], [x, y]);
          const want = new array(n) as TypedArray;
          reduceReference(op, want, a.subarray(at), b.subarray(at));
          assertEquals(await valuesRead(x), valuesOf(want), what);
          gpu.kernels.scale(gpu.encoder(), x, 3);
          divideReference(want, 3);
          assertEquals(await valuesRead(x), valuesOf(want), `${what} / 3`);
          da.destroy();
          db.destroy();
        }
      }
    }
  }
}
