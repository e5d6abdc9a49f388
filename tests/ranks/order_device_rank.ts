// Rank program for the device's max and min on floats: NaN, infinities and zeros of both signs
// give the host kernels' results bit for bit (kernels/reduce.ts; NaN as NaN), in f32 (scalar and four lanes) and in f16 and
// bf16. It runs in a rank worker so that its WebGPU device is torn down by the launcher.
import type { Communicator } from "../../mod.ts";
import { assertEquals } from "../_assert.ts";
import { GpuBuffer } from "../../primitives/memory/gpu_memory.ts";
import { reduce } from "../../kernels/reduce.ts";
import { setValues } from "../../kernels/elements.ts";
import { DTYPE_INFO, type TypedArray } from "../../primitives/types.ts";

const SPECIAL = [NaN, -0, 0, Infinity, -Infinity, 1, -1];

/**
 * The bits of every element, and NaN as such: WebAssembly leaves a NaN result's sign and
 * payload to the hardware (x86 gives 0xffc00000), so only NaN-ness is the host's promise.
 */
function bits(view: TypedArray, dtype: "f32" | "f16" | "bf16"): (number | string)[] {
  const words = dtype === "f32"
    ? new Uint32Array(view.buffer, view.byteOffset, view.length)
    : new Uint16Array(view.buffer, view.byteOffset, view.length);
  const nan = dtype === "f32" ? 0x7f800000 : dtype === "f16" ? 0x7c00 : 0x7f80;
  const magnitude = dtype === "f32" ? 0x7fffffff : 0x7fff;
  return Array.from(words, (w) => (w & magnitude) > nan ? "NaN" : w);
}

export async function run(comm: Communicator): Promise<number> {
  const gpu = comm.gpu!;
  let cases = 0;
  for (const dtype of ["f32", "f16", "bf16"] as const) {
    const array = DTYPE_INFO[dtype].array;
    // Every pair of specials, repeated to 4 × 49 + 3 elements: vector lanes and a scalar tail.
    const pairs = SPECIAL.flatMap((x) => SPECIAL.map((y) => [x, y]));
    const n = 4 * pairs.length + 3;
    const a = new array(n) as TypedArray, b = new array(n) as TypedArray;
    setValues(a, Array.from({ length: n }, (_, i) => pairs[i % pairs.length][0]));
    setValues(b, Array.from({ length: n }, (_, i) => pairs[i % pairs.length][1]));
    for (const op of ["max", "min"] as const) {
      const da = GpuBuffer.alloc(gpu, dtype, n), db = GpuBuffer.alloc(gpu, dtype, n);
      await da.write(a);
      await db.write(b);
      gpu.kernels.reduce(gpu.encoder(), op, [da], [da, db]);
      const got = new array(n) as TypedArray, want = new array(n) as TypedArray;
      await da.read(got);
      reduce(op, want, a, b);
      assertEquals(bits(got, dtype), bits(want, dtype), `${dtype} ${op}`);
      da.destroy();
      db.destroy();
      cases += n;
    }
  }
  return cases;
}
