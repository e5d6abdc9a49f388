// One rank of phases.ts: each pass of a reproducible allreduce timed alone, in ms per call.
import type { Communicator } from "../../../core.ts";
import { codesOf, fromWindow, windowOf } from "../../../kernels/mod.ts";
export async function run(comm: Communicator, n: number) {
  const x = comm.alloc(n), out = comm.alloc(n);
  x.view.forEach((_, i) => x.view[i] = Math.sin(i) * 2 ** (i % 20));
  const codes = comm.alloc(n, { dtype: "bf16" }), acc = comm.alloc(n, { dtype: "f64" });
  const t = (f: () => unknown, k = 20) => {
    const s = performance.now();
    for (let i = 0; i < k; i++) f();
    return ((performance.now() - s) / k).toFixed(3);
  };
  const ta = async (f: () => Promise<unknown>, k = 20) => {
    await f();
    const s = performance.now();
    for (let i = 0; i < k; i++) await f();
    return ((performance.now() - s) / k).toFixed(3);
  };
  const r: Record<string, string> = {};
  r.codes = t(() => codesOf(x.view as Float32Array, n, codes.view as Uint16Array));
  r.window = t(() =>
    windowOf(x.view as Float32Array, n, codes.view as Uint16Array, acc.view as Float64Array)
  );
  r.store = t(() =>
    fromWindow(acc.view as Float64Array, codes.view as Uint16Array, out.view as Float32Array, 1)
  );
  r.max_bf16 = await ta(() => comm.allreduce(codes, { op: "max" }));
  r.sum_f64 = await ta(() => comm.allreduce(acc));
  r.plain = await ta(() => comm.allreduce(x, { out }));
  const o = { out, reproducible: true };
  r.repro = await ta(() => comm.allreduce(x, o));
  return r;
}
