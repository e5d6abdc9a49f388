/**
 * Typed wrappers of the trainer's WGSL kernels (`mlp.wgsl`). Each wrapper prepares one call — a
 * pipeline, a bind group and a uniform block written once — that {@linkcode GpuMlpKernels.record}
 * can record again and again: a training step replays the same calls every batch, so it costs
 * no allocation and no upload besides the batch itself.
 * @module
 */

import type { GemmOptions } from "./mlp_kernels.ts";

/** Elements from `offset` on in a device buffer. */
export interface Tensor {
  buffer: GPUBuffer;
  /** In elements (f32). */
  offset: number;
}

/** One prepared dispatch. */
export interface GpuCall {
  readonly pipeline: GPUComputePipeline;
  readonly bindGroup: GPUBindGroup;
  readonly groups: readonly [number, number];
}

const ENTRIES = [
  "gemm",
  "relu_backward",
  "sigmoid_forward",
  "sigmoid_backward",
  "colsum",
  "sgd",
  "softmax_xent",
  "score",
  "peak",
] as const;
type Entry = typeof ENTRIES[number];

/** Floating-point operations of one round of the `peak` kernel: 8 vec4 FMAs. */
export const PEAK_FLOPS_PER_ROUND = 8 * 4 * 2;

/** Words of the `Call` uniform block. */
const CALL_WORDS = 20;
const RELU = 1, ACCUMULATE = 2, BIAS = 4;
const TILE = 64, WORKGROUP = 256, MAX_GROUPS = 65535;

interface CallFields {
  m?: number;
  n?: number;
  k?: number;
  flags?: number;
  aOff?: number;
  aRs?: number;
  aCs?: number;
  bOff?: number;
  bRs?: number;
  bCs?: number;
  cOff?: number;
  ldc?: number;
  biasOff?: number;
  lr?: number;
  mu?: number;
  scale?: number;
}

/**
 * The trainer's device kernels on one `GPUDevice`.
 */
export class GpuMlpKernels {
  readonly #device: GPUDevice;
  readonly #pipelines: Record<Entry, GPUComputePipeline>;
  /** Bound where a kernel declares a buffer the call does not use. */
  readonly #unused: GPUBuffer;
  readonly #uniforms: GPUBuffer[] = [];

  private constructor(device: GPUDevice, pipelines: Record<Entry, GPUComputePipeline>) {
    this.#device = device;
    this.#pipelines = pipelines;
    this.#unused = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  }

  /** Compiles the kernels for `device`. */
  static async create(device: GPUDevice): Promise<GpuMlpKernels> {
    const code = await (await fetch(new URL("./mlp.wgsl", import.meta.url))).text();
    const module = device.createShaderModule({ code });
    const pipelines = Object.fromEntries(
      await Promise.all(ENTRIES.map(async (entryPoint) => [
        entryPoint,
        await device.createComputePipelineAsync({
          layout: "auto",
          compute: { module, entryPoint },
        }),
      ])),
    ) as Record<Entry, GPUComputePipeline>;
    return new GpuMlpKernels(device, pipelines);
  }

  /** C (m × n) = op(A) · op(B) (+ bias, + C, ReLU), as `MlpKernels.gemm`. */
  gemm(
    c: Tensor,
    a: Tensor,
    b: Tensor,
    m: number,
    n: number,
    k: number,
    options: Omit<GemmOptions, "bias"> & { bias?: Tensor } = {},
  ): GpuCall {
    const { transA = false, transB = false, bias, relu = false, accumulate = false } = options;
    const [aRs, aCs] = transA ? [1, m] : [k, 1];
    const [bRs, bCs] = transB ? [1, k] : [n, 1];
    const flags = (relu ? RELU : 0) | (accumulate ? ACCUMULATE : 0) | (bias ? BIAS : 0);
    return this.#call("gemm", [Math.ceil(n / TILE), Math.ceil(m / TILE)], {
      m,
      n,
      k,
      flags,
      aOff: a.offset,
      aRs,
      aCs,
      bOff: b.offset,
      bRs,
      bCs,
      cOff: c.offset,
      ldc: n,
      biasOff: bias?.offset ?? 0,
    }, [a.buffer, b.buffer, c.buffer, bias?.buffer ?? this.#unused]);
  }

  /**
   * The device's peak: `invocations` threads of `rounds` × {@linkcode PEAK_FLOPS_PER_ROUND}
   * register-only FMAs (each writes one float of `out`).
   */
  peak(out: Tensor, invocations: number, rounds: number): GpuCall {
    return this.#elementwise("peak", invocations, { aOff: out.offset, k: rounds }, [out.buffer]);
  }

  /** `d[i] = 0` wherever `out[i] ≤ 0`, over n elements. */
  reluBackward(d: Tensor, out: Tensor, n: number): GpuCall {
    return this.#elementwise("relu_backward", n, { aOff: d.offset, bOff: out.offset }, [
      d.buffer,
      out.buffer,
    ]);
  }

  /** `x = σ(x)` over n elements. */
  sigmoidForward(x: Tensor, n: number): GpuCall {
    return this.#elementwise("sigmoid_forward", n, { aOff: x.offset }, [x.buffer]);
  }

  /** `d *= out·(1 − out)` over n elements. */
  sigmoidBackward(d: Tensor, out: Tensor, n: number): GpuCall {
    return this.#elementwise("sigmoid_backward", n, { aOff: d.offset, bOff: out.offset }, [
      d.buffer,
      out.buffer,
    ]);
  }

  /** `dst[j] (+)= Σ rows of src[r, j]` over `cols` columns. */
  colsum(dst: Tensor, src: Tensor, rows: number, cols: number, accumulate: boolean): GpuCall {
    return this.#elementwise("colsum", cols, {
      m: rows,
      aOff: dst.offset,
      bOff: src.offset,
      flags: accumulate ? ACCUMULATE : 0,
    }, [dst.buffer, src.buffer]);
  }

  /** SGD over whole buffers of n parameters (`velocity` used when momentum ≠ 0). */
  sgd(
    params: GPUBuffer,
    grads: GPUBuffer,
    velocity: GPUBuffer,
    n: number,
    step: { lr: number; momentum: number; scale: number },
  ): GpuCall {
    return this.#elementwise(
      "sgd",
      n,
      { lr: step.lr, mu: step.momentum, scale: step.scale },
      [params, grads, velocity],
    );
  }

  /**
   * Softmax cross-entropy of `rows` rows of `classes` logits: gradients ((p − onehot)·scale)
   * into `dlogits`; `batch` holds the labels (as floats), then gets each row's loss and hit.
   */
  softmaxXent(
    dlogits: Tensor,
    logits: Tensor,
    batch: Tensor,
    rows: number,
    classes: number,
    scale: number,
  ): GpuCall {
    return this.#elementwise(
      "softmax_xent",
      rows,
      {
        m: rows,
        n: classes,
        aOff: dlogits.offset,
        bOff: logits.offset,
        cOff: batch.offset,
        scale,
      },
      [dlogits.buffer, logits.buffer, batch.buffer],
      "m",
    );
  }

  /** `total[0] += Σ losses`, `total[1] += Σ hits` of softmaxXent's `rows` rows in `batch`. */
  score(total: Tensor, batch: Tensor, rows: number): GpuCall {
    return this.#call("score", [1, 1], { m: rows, aOff: total.offset, bOff: batch.offset + rows }, [
      total.buffer,
      batch.buffer,
    ]);
  }

  /** Records calls, in order, into a compute pass. */
  record(pass: GPUComputePassEncoder, calls: readonly GpuCall[]): void {
    for (const c of calls) {
      pass.setPipeline(c.pipeline);
      pass.setBindGroup(0, c.bindGroup);
      pass.dispatchWorkgroups(c.groups[0], c.groups[1]);
    }
  }

  /** Releases the uniform blocks of every call made. */
  destroy(): void {
    for (const u of this.#uniforms.splice(0)) u.destroy();
    this.#unused.destroy();
  }

  #elementwise(
    entry: Entry,
    n: number,
    fields: CallFields,
    buffers: GPUBuffer[],
    count: "n" | "m" = "n",
  ): GpuCall {
    const groups = Math.max(1, Math.ceil(n / WORKGROUP));
    const nx = Math.min(groups, MAX_GROUPS);
    return this.#call(entry, [nx, Math.ceil(groups / nx)], { [count]: n, ...fields, nx }, buffers);
  }

  #call(
    entry: Entry,
    groups: [number, number],
    f: CallFields & { nx?: number },
    buffers: GPUBuffer[],
  ): GpuCall {
    const words = new ArrayBuffer(CALL_WORDS * 4);
    const u32 = new Uint32Array(words), f32 = new Float32Array(words);
    u32.set([
      f.m ?? 0,
      f.n ?? 0,
      f.k ?? 0,
      f.flags ?? 0,
      f.aOff ?? 0,
      f.aRs ?? 0,
      f.aCs ?? 0,
      f.bOff ?? 0,
      f.bRs ?? 0,
      f.bCs ?? 0,
      f.cOff ?? 0,
      f.ldc ?? 0,
      f.biasOff ?? 0,
      f.nx ?? 0,
    ]);
    f32.set([f.lr ?? 0, f.mu ?? 0, f.scale ?? 0], 16);
    const uniform = this.#device.createBuffer({
      size: words.byteLength,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.#device.queue.writeBuffer(uniform, 0, words);
    this.#uniforms.push(uniform);
    // Binding numbers as in mlp.wgsl: 1–4 for the GEMM, 5–7 for the rest.
    const first = entry === "gemm" ? 1 : 5;
    const pipeline = this.#pipelines[entry];
    const bindGroup = this.#device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: uniform } },
        ...buffers.map((buffer, i) => ({ binding: first + i, resource: { buffer } })),
      ],
    });
    return { pipeline, bindGroup, groups };
  }
}
