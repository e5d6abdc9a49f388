/**
 * The device's raw ceilings, measured the way dccl moves data, to judge the `gpu` transport and
 * the host-staged paths against: host → device writes (4 MiB pieces), device → host reads
 * (staging pool; piece size can be varied), a host round trip (read then write back, what
 * `staged` does around its host collective), device → device copies (timed by difference, so the
 * completion wait cancels), and Deno's completion floor. Prints one table; `--json` writes it with the device's facts.
 *
 *     deno run -A scripts/limits/probes/gpu_probe.ts [--max 2^28] [--pieces 4M,16M,64M] [--json out.json]
 * @module
 */

import { parseArgs } from "node:util";
import { GpuBuffer } from "../../../core.ts";
import { GpuDevice } from "../../../internal.ts";

const { values } = parseArgs({
  options: {
    max: { type: "string", default: String(2 ** 28) },
    pieces: { type: "string", default: "16M" },
    json: { type: "string" },
  },
});
const units: Record<string, number> = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 };
const bytesOf = (v: string) => {
  const m = v.match(/^(\d+)([KMG]?)$/i) ?? v.match(/^(\d+)\^(\d+)$/);
  if (!m) throw new Error(`not a size: ${v}`);
  return v.includes("^")
    ? Number(m[1]) ** Number(m[2])
    : Number(m[1]) * (units[m[2].toUpperCase()] ?? 1);
};
const maxFloats = bytesOf(values.max);
const pieces = values.pieces.split(",").map(bytesOf);
const counts: number[] = [];
for (let n = 2 ** 20; n <= maxFloats; n *= 4) counts.push(n);

/** Repeats `body` (ending at completion) until 200 ms have passed; µs per repetition. */
async function timed(body: () => Promise<void>, minMs = 200): Promise<number> {
  await body(); // first touch of fresh memory, pipelines, staging
  let reps = 0;
  const start = performance.now();
  do {
    await body();
    reps++;
  } while (performance.now() - start < minMs);
  return ((performance.now() - start) * 1e3) / reps;
}

const gbps = (bytes: number, us: number) => (bytes * 8) / us / 1e3;
const rows: Record<string, number | string>[] = [];
let info: unknown, floorMs = 0;
for (const piece of pieces) {
  const gpu = await GpuDevice.open({ readPieceBytes: piece });
  info = gpu.info;
  floorMs = await gpu.completionFloorMs();
  for (const n of counts) {
    const bytes = n * 4;
    const host = new Float32Array(n).fill(1);
    const a = GpuBuffer.alloc(gpu, "f32", n), b = GpuBuffer.alloc(gpu, "f32", n);
    const write = await timed(async () => {
      await a.write(host);
      await gpu.synchronize();
    });
    const read = await timed(() => a.read(host));
    const roundTrip = await timed(async () => {
      await a.read(host);
      await b.write(host);
      await gpu.synchronize();
    });
    // Device copies, timed by difference (k and 2k per completion), so the ~11 ms completion
    // wait cancels out.
    const k = Math.max(4, Math.ceil((4 * 2 ** 30) / bytes));
    const copies = (count: number) =>
      timed(async () => {
        for (let i = 0; i < count; i++) gpu.kernels.copy(gpu.encoder(), a, b);
        await gpu.synchronize();
      });
    const copy = Math.max(1e-3, ((await copies(2 * k)) - (await copies(k))) / k);
    // The same copy by a kernel (a one-input reduce): the memory's own roofline, which the
    // copy command need not reach.
    const kernelCopies = (count: number) =>
      timed(async () => {
        for (let i = 0; i < count; i++) gpu.kernels.reduce(gpu.encoder(), "sum", [b], [a]);
        await gpu.synchronize();
      });
    const kernelCopy = Math.max(1e-3, ((await kernelCopies(2 * k)) - (await kernelCopies(k))) / k);
    rows.push({
      piece_MiB: piece / 2 ** 20,
      floats: n,
      write_Gbps: gbps(bytes, write),
      read_Gbps: gbps(bytes, read),
      round_trip_Gbps: gbps(bytes, roundTrip),
      d2d_copy_Gbps: gbps(bytes, copy),
      kernel_copy_Gbps: gbps(bytes, kernelCopy),
    });
    a.destroy();
    b.destroy();
  }
  gpu.destroy();
}

console.log(`# ${JSON.stringify(info)}`);
console.log(`# completion floor ${floorMs.toFixed(2)} ms; Gb/s = bytes·8 / time (copy: B copied)`);
console.log(Object.keys(rows[0]).join("\t"));
for (const r of rows) {
  console.log(
    Object.values(r).map((v) => (typeof v === "number" && !Number.isInteger(v) ? v.toFixed(1) : v))
      .join("\t"),
  );
}
if (values.json) {
  Deno.writeTextFileSync(values.json, JSON.stringify({ gpu: info, floorMs, rows }, null, 1));
}
