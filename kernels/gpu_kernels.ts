/**
 * Typed wrappers of the WGSL device kernels (wgsl.ts: `reduce.wgsl`, `scale.wgsl`, `reduce_half.wgsl`): they fill in each
 * template for an op, a dtype and a number of buffers, cache pipelines and bind groups (per
 * buffers and window, like `ncclMemAlloc` registration), and cut every call into windows of at
 * most the device's storage binding size, so a 1 GiB buffer works where bindings stop at 128 MiB.
 * Calls record commands into an encoder; nothing runs until the caller submits it.
 * @module
 */

import { fill, type KernelSources, wgslType, windowParams, windowWgsl } from "./wgsl.ts";
import {
  HALF_KERNELS,
  type HalfCall,
  type HalfKernel,
  halfParts,
  halfPipelineKey,
  type HalfReduction,
  halfSource,
} from "./gpu_half.ts";
import { type Dtype, DTYPE_INFO, type KernelOp } from "./elements.ts";

/** A window of a device buffer: what kernels read and write. */
export interface DeviceView {
  /** The device buffer. */
  readonly buffer: GPUBuffer;
  /** Identifies `buffer` in cache keys. */
  readonly id: number;
  /** Where the view starts in `buffer`. */
  readonly byteOffset: number;
  /** Elements in the view. */
  readonly length: number;
  /** Element type (`f32` or `i32`: see {@linkcode wgslType}). */
  readonly dtype: Dtype;
}

/** The device limits the kernels work within. */
export interface KernelLimits {
  /** Largest storage binding, bytes (a window's size). */
  bindingBytes: number;
  /** Alignment of binding offsets, bytes. */
  alignment: number;
  /** Storage buffers one dispatch may bind. */
  storageBindings: number;
  /** Workgroups per dispatch dimension. */
  maxWorkgroups: number;
}

/** The 16-bit dtypes, held two to a u32 word (reduce_half.wgsl). */
const isHalf = (dtype: Dtype) => dtype === "f16" || dtype === "bf16";

const COMBINE: Record<KernelOp, string> = {
  sum: "a + b",
  prod: "a * b",
  max: "max(a, b)",
  min: "min(a, b)",
};
/** Floats' max and min order NaN and zeros as the host does (float_order.wgsl). */
const FLOAT_COMBINE: Record<KernelOp, string> = {
  ...COMBINE,
  max: "ordered_max(a, b)",
  min: "ordered_min(a, b)",
};
const WORKGROUP = 256;
/** Bind groups kept before the cache starts over (each holds a small uniform buffer). */
const MAX_BIND_GROUPS = 4096;

/** A binding of one dispatch: a buffer window, read or read-write. */
/** A view a kernel binds, and whether it writes it. */
interface Binding {
  view: DeviceView;
  write: boolean;
}

/** Records kernel dispatches and copies for one device. */
export class GpuKernels {
  readonly #device: GPUDevice;
  readonly #sources: KernelSources;
  readonly #limits: KernelLimits;
  readonly #pipelines = new Map<string, GPUComputePipeline>();
  readonly #bindGroups = new Map<string, { group: GPUBindGroup; params: GPUBuffer }>();
  readonly #scratch = new Map<Dtype, { view: DeviceView; buffer: GPUBuffer }>();
  #ids = 1 << 30; // scratch buffers' ids, apart from those of allocations

  readonly #retire: (buffer: GPUBuffer) => void;

  /**
   * Kernels for `device` within `limits`. `retire` takes buffers the kernels no longer need but
   * recorded commands may still use: the caller destroys them once those are submitted.
   */
  constructor(
    device: GPUDevice,
    sources: KernelSources,
    limits: KernelLimits,
    retire: (buffer: GPUBuffer) => void,
  ) {
    this.#device = device;
    this.#sources = sources;
    this.#limits = limits;
    this.#retire = retire;
  }

  /**
   * `outs[m] = ins[0] op ins[1] op …` (all of one length and dtype), or `outs[m] op ins[0] op …`
   * with `accumulate` (one output). An output may be an input (in place) when it is the very same
   * view; other overlaps, and more buffers than a dispatch may bind, go through a scratch buffer.
   */
  reduce(
    encoder: GPUCommandEncoder,
    op: KernelOp,
    outs: DeviceView[],
    ins: DeviceView[],
    accumulate?: boolean,
  ): void {
    accumulate ??= false;
    const n = outs[0].length;
    if (n === 0) return;
    // 16-bit elements are written a whole word at a time, so one output per dispatch; the other
    // outputs are copies of it.
    const direct = isHalf(outs[0].dtype) ? outs.slice(0, 1) : outs;
    const bindings = this.#bindings(direct, ins);
    if (bindings && bindings.length <= this.#limits.storageBindings) {
      this.#combine(encoder, op, direct, ins, bindings, accumulate);
      for (const out of outs.slice(direct.length)) this.copy(encoder, direct[0], out);
      return;
    }
    // Through scratch: inputs in groups that fit beside it, accumulated, then copied out.
    const scratch = this.#scratchView(outs[0].dtype, n);
    const first = accumulate ? [outs[0], ...ins] : ins;
    const perDispatch = Math.max(1, this.#limits.storageBindings - 1);
    for (let k = 0; k < first.length; k += perDispatch) {
      const group = first.slice(k, k + perDispatch);
      this.#combine(encoder, op, [scratch], group, this.#bindings([scratch], group)!, k > 0);
    }
    for (const out of outs) this.copy(encoder, scratch, out);
  }

  /** One reduce dispatch of `reduce`: reduce.wgsl's, or reduce_half.wgsl's for 16-bit words. */
  #combine(
    encoder: GPUCommandEncoder,
    op: KernelOp,
    outs: DeviceView[],
    ins: DeviceView[],
    bindings: Binding[],
    accumulate: boolean,
  ): void {
    if (!isHalf(outs[0].dtype)) {
      return this.#dispatchReduce(encoder, op, outs, ins, bindings, accumulate);
    }
    const slot = (v: DeviceView) => bindings.findIndex((b) => b.view.buffer === v.buffer);
    const terms = [...(accumulate ? [outs[0]] : []), ...ins].map(slot);
    this.#reduceHalf(encoder, `${op}:${slot(outs[0])}:${terms.length}`, {
      bindings,
      out: slot(outs[0]),
      terms,
      combine: FLOAT_COMBINE[op],
    });
  }

  /** `view[i] /= divisor` in place (integers truncate toward zero). */
  scale(encoder: GPUCommandEncoder, view: DeviceView, divisor: number): void {
    if (view.length === 0) return;
    if (isHalf(view.dtype)) {
      return this.#reduceHalf(encoder, "scale", {
        bindings: [{ view, write: true }],
        out: 0,
        terms: [0],
        finish: "x / divisor",
        constants: { divisor },
      });
    }
    const scalar = wgslType(view.dtype);
    this.#vectorized([view], view.length, (start, count, lanes) => {
      const type = lanes === 4 ? `vec4<${scalar}>` : scalar;
      const key = `scale:${type}:${divisor}`;
      const pipeline = this.#pipeline(key, () =>
        fill(this.#sources.scale, {
          TYPE: type,
          DIVIDE: scalar === "f32" ? "x / divisor" : "x / i32(divisor)",
        }), { divisor });
      this.#windows(start, count, view.dtype, lanes, (first, n) => {
        const [b] = this.#window([{ view, write: true }], first, n, lanes);
        const params = Uint32Array.of(n / lanes, b.skip, 0, 0);
        this.#dispatch(encoder, pipeline, key, [b], params, n / lanes);
      });
    });
  }

  /**
   * Copies `src` into `dst` (same length and dtype): a buffer copy where offsets and length are
   * whole words, else (16-bit elements) a kernel that moves the bits, through scratch when both
   * are windows of one buffer.
   */
  copy(encoder: GPUCommandEncoder, src: DeviceView, dst: DeviceView): void {
    const bytes = src.length * elementBytes(src.dtype);
    if (bytes === 0 || (src.buffer === dst.buffer && src.byteOffset === dst.byteOffset)) return;
    if ((src.byteOffset | dst.byteOffset | bytes) % 4 === 0) {
      return encoder.copyBufferToBuffer(
        src.buffer,
        src.byteOffset,
        dst.buffer,
        dst.byteOffset,
        bytes,
      );
    }
    if (src.buffer === dst.buffer) {
      const scratch = this.#scratchView(src.dtype, src.length);
      this.copy(encoder, src, scratch);
      return this.copy(encoder, scratch, dst);
    }
    this.#dispatchHalf(encoder, "copy", HALF_KERNELS.word, 0, dst.length, {
      bindings: [{ view: dst, write: true }, { view: src, write: false }],
      out: 0,
      body:
        "      let element = (b1[(i + skip(1u)) / 2u] >> (16u * ((i + skip(1u)) % 2u))) & 0xffffu;",
    });
  }

  /** Frees the cached bind groups and scratch. */
  destroy(): void {
    for (const { params } of this.#bindGroups.values()) params.destroy();
    this.#bindGroups.clear();
    for (const { buffer } of this.#scratch.values()) buffer.destroy();
    this.#scratch.clear();
  }

  /**
   * One binding per distinct buffer, outputs read-write; undefined when one buffer is used at two
   * different offsets (an in-place output must be the very same view as its input).
   */
  #bindings(outs: DeviceView[], ins: DeviceView[]): Binding[] | undefined {
    const byBuffer = new Map<GPUBuffer, Binding>();
    for (const [views, write] of [[outs, true], [ins, false]] as const) {
      for (const view of views) {
        const seen = byBuffer.get(view.buffer);
        if (!seen) byBuffer.set(view.buffer, { view, write });
        else if (seen.view.byteOffset !== view.byteOffset) return undefined;
        else seen.write ||= write;
      }
    }
    return [...byBuffer.values()];
  }

  #dispatchReduce(
    encoder: GPUCommandEncoder,
    op: KernelOp,
    outs: DeviceView[],
    ins: DeviceView[],
    bindings: Binding[],
    accumulate: boolean,
  ): void {
    const slot = (v: DeviceView) => bindings.findIndex((b) => b.view.buffer === v.buffer);
    const outSlots = outs.map(slot), inSlots = ins.map(slot);
    const at = (j: number) => `b${j}[i + skip(${j}u)]`;
    const terms = [...(accumulate ? [at(outSlots[0])] : []), ...inSlots.map(at)];
    const body = [
      `    var acc = ${terms[0]};`,
      ...terms.slice(1).map((t) => `    acc = combine(acc, ${t});`),
      ...outSlots.map((j) => `    ${at(j)} = acc;`),
    ].join("\n");
    const shape = `${op}:${bindings.map((b) => (b.write ? "w" : "r")).join("")}:` +
      `${outSlots}:${inSlots}:${accumulate}`;
    const dtype = outs[0].dtype;
    this.#vectorized(bindings.map((b) => b.view), outs[0].length, (start, count, lanes) => {
      const type = lanes === 4 ? `vec4<${wgslType(dtype)}>` : wgslType(dtype);
      const key = `reduce:${type}:${shape}`;
      const pipeline = this.#pipeline(key, () =>
        fill(this.#sources.reduce, {
          TYPE: type,
          BITS: lanes === 4 ? "vec4<u32>" : "u32",
          BOOLS: lanes === 4 ? "vec4<bool>" : "bool",
          ORDER: dtype === "i32" ? "" : this.#sources.order,
          COMBINE: (dtype === "i32" ? COMBINE : FLOAT_COMBINE)[op],
          WINDOW: windowWgsl(this.#sources, bindings.map((b) => b.write), "T"),
          BODY: body,
        }));
      this.#windows(start, count, dtype, lanes, (first, n) => {
        const windows = this.#window(bindings, first, n, lanes);
        const params = windowParams(windows, n / lanes);
        this.#dispatch(encoder, pipeline, key, windows, params, n / lanes);
      });
    });
  }

  /**
   * `out`'s view ← `finish(terms[0] op terms[1] op …)` elementwise, over 16-bit elements (terms
   * are binding slots; `combine` and `finish` fill the kernels' functions, `constants` their
   * overrides): eight elements at a time where every view starts on a 16-byte boundary, word by
   * word for the rest (gpu_half.ts).
   */
  #reduceHalf(encoder: GPUCommandEncoder, shape: string, k: HalfReduction<Binding>): void {
    for (const part of halfParts(k)) {
      this.#dispatchHalf(encoder, shape, part.kernel, part.start, part.count, { ...k, ...part });
    }
  }

  /**
   * Dispatches (per window) of one of the half kernels writing binding `out`'s view over elements
   * `[start, start + n)`, with `body` as its BODY.
   */
  #dispatchHalf(
    encoder: GPUCommandEncoder,
    shape: string,
    kernel: HalfKernel,
    start: number,
    n: number,
    k: HalfCall<Binding>,
  ): void {
    const dtype = k.bindings[k.out].view.dtype;
    const key = halfPipelineKey(kernel, shape, k);
    const pipeline = this.#pipeline(key, () => halfSource(this.#sources, kernel, k), k.constants);
    this.#windows(start, n, dtype, Math.max(2, kernel.unit), (first, count) => {
      const windows = this.#window(k.bindings, first, count, kernel.unit);
      const params = windowParams(windows, count / kernel.unit);
      this.#dispatch(encoder, pipeline, key, windows, params, kernel.invocations(count));
    });
  }

  /**
   * Cuts `n` elements into a part done with vec4 accesses (when every view starts on a 16-byte
   * boundary, 128-bit loads and stores) and a scalar rest: `each(start, count, lanes)`.
   */
  #vectorized(
    views: DeviceView[],
    n: number,
    each: (start: number, count: number, lanes: 1 | 4) => void,
  ): void {
    const aligned = views.every((v) => v.byteOffset % 16 === 0) &&
      elementBytes(views[0].dtype) === 4;
    const vectors = aligned ? n - (n % 4) : 0;
    if (vectors > 0) each(0, vectors, 4);
    if (vectors < n) each(vectors, n - vectors, 1);
  }

  /**
   * Calls `each(first, count)` for consecutive windows covering elements `[start, start + n)`,
   * each at most a binding's size (and a multiple of `lanes` elements).
   */
  #windows(
    start: number,
    n: number,
    dtype: Dtype,
    lanes: number,
    each: (first: number, count: number) => void,
  ): void {
    const bytes = elementBytes(dtype);
    // Room for the alignment slack of every binding's offset.
    const room = Math.floor((this.#limits.bindingBytes - this.#limits.alignment) / bytes);
    const perWindow = room - (room % lanes);
    for (let at = 0; at < n; at += perWindow) each(start + at, Math.min(perWindow, n - at));
  }

  /**
   * Each binding's aligned range covering elements `[start, start + count)` of its view; `skip`
   * counts elements of `lanes` (the views start on a 16-byte boundary when `lanes` is 4).
   */
  #window(bindings: Binding[], start: number, count: number, lanes: number) {
    return bindings.map(({ view, write }) => {
      const bytes = elementBytes(view.dtype);
      const first = view.byteOffset + start * bytes;
      const offset = first - (first % this.#limits.alignment);
      // Bindings cover whole words (16-bit elements may end half-way through one).
      const size = Math.ceil((first - offset + count * bytes) / 4) * 4;
      return { view, write, offset, size, skip: (first - offset) / bytes / lanes };
    });
  }

  #dispatch(
    encoder: GPUCommandEncoder,
    pipeline: GPUComputePipeline,
    key: string,
    windows: { view: DeviceView; offset: number; size: number }[],
    params: Uint32Array,
    count: number,
  ): void {
    const groupKey = `${key}|${windows.map((w) => `${w.view.id}:${w.offset}:${w.size}`)}|${params}`;
    let cached = this.#bindGroups.get(groupKey);
    if (!cached) {
      if (this.#bindGroups.size >= MAX_BIND_GROUPS) {
        for (const { params } of this.#bindGroups.values()) this.#retire(params);
        this.#bindGroups.clear();
      }
      const uniform = this.#device.createBuffer({
        size: Math.max(16, params.byteLength),
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      });
      this.#device.queue.writeBuffer(uniform, 0, params as Uint32Array<ArrayBuffer>);
      const group = this.#device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: uniform } },
          ...windows.map((w, j) => ({
            binding: j + 1,
            resource: { buffer: w.view.buffer, offset: w.offset, size: w.size },
          })),
        ],
      });
      this.#bindGroups.set(groupKey, cached = { group, params: uniform });
    }
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, cached.group);
    pass.dispatchWorkgroups(Math.min(this.#limits.maxWorkgroups, Math.ceil(count / WORKGROUP)));
    pass.end();
  }

  #pipeline(
    key: string,
    code: () => string,
    constants?: Record<string, number>,
  ): GPUComputePipeline {
    let pipeline = this.#pipelines.get(key);
    if (!pipeline) {
      const module = this.#device.createShaderModule({ code: code(), label: key });
      pipeline = this.#device.createComputePipeline({
        layout: "auto",
        compute: { module, entryPoint: "main", constants },
        label: key,
      });
      this.#pipelines.set(key, pipeline);
    }
    return pipeline;
  }

  /** A scratch window of `n` elements of `dtype`, grown as needed. */
  #scratchView(dtype: Dtype, n: number): DeviceView {
    let s = this.#scratch.get(dtype);
    if (!s || s.view.length < n) {
      if (s) this.#retire(s.buffer);
      const length = Math.max(n, 2 * (s?.view.length ?? 0));
      const buffer = this.#device.createBuffer({
        size: Math.max(16, Math.ceil((length * elementBytes(dtype)) / 4) * 4),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      });
      s = { buffer, view: { buffer, id: this.#ids++, byteOffset: 0, length, dtype } };
      this.#scratch.set(dtype, s);
    }
    return { ...s.view, length: n };
  }
}

function elementBytes(dtype: Dtype): number {
  return DTYPE_INFO[dtype].bytes;
}

export { deviceRefusal, KERNEL_SOURCES, wgslType } from "./wgsl.ts";
export type { KernelSources } from "./wgsl.ts";
