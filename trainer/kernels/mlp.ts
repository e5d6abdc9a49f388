/**
 * The trainer's CPU kernels in WebAssembly SIMD: the relaxed-SIMD build (FMA) where the engine
 * validates it, the plain-SIMD build elsewhere. Kernels work on arrays in one rank heap; GEMMs
 * pack their operands into scratch panels of that heap, `KC` steps of k at a time.
 * @module
 */

import type { RankHeap } from "../../internal.ts";
import { MLP_PLAIN_WASM_BASE64, MLP_RELAXED_WASM_BASE64 } from "./mlp_wasm_bytes.generated.ts";
import type { GemmOptions, MlpKernels, PixelSource } from "./mlp_kernels.ts";
import type { MlpBuild } from "./mlp_wat.ts";
import { KU, MR, NR } from "./mlp_wat.ts";

/** Steps of k per packed block: one B panel (KC × NR floats, 8 KiB) stays in L1. */
const KC = 256;
/** Most rows of C for which B is read in place: more reuse each of its panels enough to pack it. */
const DIRECT_ROWS = 64;
const FLAG_RELU = 1, FLAG_ACCUMULATE = 2;

const modules = new Map<MlpBuild, WebAssembly.Module>();

function decode(base64: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

/** The build this engine runs: `relaxed` when it validates relaxed SIMD, else `plain`. */
export function bestMlpBuild(): MlpBuild {
  return WebAssembly.validate(decode(MLP_RELAXED_WASM_BASE64)) ? "relaxed" : "plain";
}

function mlpModule(build: MlpBuild): WebAssembly.Module {
  let module = modules.get(build);
  if (!module) {
    const base64 = build === "relaxed" ? MLP_RELAXED_WASM_BASE64 : MLP_PLAIN_WASM_BASE64;
    module = new WebAssembly.Module(decode(base64));
    modules.set(build, module);
  }
  return module;
}

interface Exports {
  pack_a(dst: number, src: number, rs: number, cs: number, m: number, k: number): void;
  pack_b(dst: number, src: number, rs: number, cs: number, k: number, n: number): void;
  gemm_packed(
    ap: number,
    bp: number,
    c: number,
    ldc: number,
    m: number,
    n: number,
    k: number,
    bias: number,
    flags: number,
    tile: number,
    bStride: number,
  ): void;
  relu_mask(d: number, a: number, n: number): void;
  gather_u8(dst: number, src: number, rows: number, count: number, pixels: number): void;
  colsum(dst: number, src: number, rows: number, cols: number, flags: number): void;
  rounded_products(
    sums: number,
    a: number,
    d: number,
    inv: number,
    md: number,
    rows: number,
    ni: number,
    no: number,
  ): void;
  sgd(p: number, g: number, v: number, n: number, lr: number, mu: number, scale: number): void;
}

/** A memory for kernels made without a data set: `gather` then refuses every source. */
let noData: WebAssembly.Memory | undefined;

/**
 * {@linkcode MlpKernels} in WebAssembly SIMD over one rank heap (and, for `gather`, the shared
 * memory holding the data set's images).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { createHeapMemory, RankHeap } from "../../internal.ts";
 * import { WasmMlpKernels } from "./mlp.ts";
 *
 * const heap = new RankHeap(createHeapMemory());
 * const kernels = new WasmMlpKernels(heap);
 * const [m, n, k] = [2, 3, 4];
 * const a = heap.alloc("f32", m * k).fill(1) as Float32Array;
 * const b = heap.alloc("f32", k * n).fill(0.5) as Float32Array;
 * const c = heap.alloc("f32", m * n) as Float32Array;
 * kernels.gemm(c, a, b, m, n, k);
 * assertEquals([...c], [2, 2, 2, 2, 2, 2]); // every element 4 × 1 × 0.5
 * ```
 */
export class WasmMlpKernels implements MlpKernels {
  readonly name: MlpBuild;
  readonly #heap: RankHeap;
  readonly #k: Exports;
  readonly #data: WebAssembly.Memory;
  #packA: Float32Array;
  #packB: Float32Array;
  readonly #tile: Float32Array;

  /**
   * Kernels over `heap` whose `gather` reads images from `data`; `build` defaults to the best
   * this engine validates.
   */
  constructor(
    heap: RankHeap,
    options: { build?: MlpBuild; data?: WebAssembly.Memory } = {},
  ) {
    this.name = options.build ?? bestMlpBuild();
    this.#heap = heap;
    this.#data = options.data ??
      (noData ??= new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }));
    this.#k = new WebAssembly.Instance(mlpModule(this.name), {
      heap: { mem: heap.memory },
      data: { mem: this.#data },
    }).exports as unknown as Exports;
    this.#packA = heap.alloc("f32", 0) as Float32Array;
    this.#packB = heap.alloc("f32", 0) as Float32Array;
    this.#tile = heap.alloc("f32", MR * NR) as Float32Array;
  }

  gemm(
    c: Float32Array,
    a: Float32Array,
    b: Float32Array,
    m: number,
    n: number,
    k: number,
    options: GemmOptions = {},
  ): void {
    const { transA = false, transB = false, bias, relu = false, accumulate = false } = options;
    this.#check(c, a, b, ...(bias ? [bias] : []));
    if (m === 0 || n === 0) return;
    // Strides of op(A)'s (i, kk) and op(B)'s (kk, j), in elements.
    const [ars, acs] = transA ? [1, m] : [k, 1];
    const [brs, bcs] = transB ? [1, k] : [n, 1];
    const kc = Math.min(KC, Math.max(k, 1));
    const packA = this.#scratch("A", roundUp(m, MR) * roundUp(kc, 4));
    const packB = this.#scratch("B", roundUp(n, NR) * roundUp(kc, 4));
    for (let k0 = 0; k0 < k || k0 === 0; k0 += KC) {
      const depth = Math.min(KC, k - k0);
      const last = k0 + KC >= k;
      this.#k.pack_a(packA, a.byteOffset + 4 * k0 * acs, ars, acs, m, depth);
      // A row-major B whose rows hold whole panels is read in place: packing it (the weights,
      // in the forward pass) would copy all of it for B's few rows of reuse.
      const direct = !transB && m <= DIRECT_ROWS && n % NR === 0 && depth % KU === 0;
      const bp = direct ? b.byteOffset + 4 * k0 * brs : packB;
      if (!direct) this.#k.pack_b(packB, b.byteOffset + 4 * k0 * brs, brs, bcs, depth, n);
      const flags = (k0 > 0 || accumulate ? FLAG_ACCUMULATE : 0) | (last && relu ? FLAG_RELU : 0);
      this.#k.gemm_packed(
        packA,
        bp,
        c.byteOffset,
        n,
        m,
        n,
        depth,
        k0 === 0 && bias ? bias.byteOffset : 0,
        flags,
        this.#tile.byteOffset,
        direct ? 4 * n : 4 * NR,
      );
    }
  }

  gather(input: Float32Array, from: PixelSource, rows: Uint32Array): void {
    this.#check(input, rows);
    if (from.memory !== this.#data) {
      throw new TypeError(
        "Cannot gather images from a memory these kernels were not made with: pass it as `data`",
      );
    }
    if (input.length < rows.length * from.pixels) {
      throw new RangeError(`Cannot gather ${rows.length} images into ${input.length} floats`);
    }
    this.#k.gather_u8(
      input.byteOffset,
      from.images.byteOffset,
      rows.byteOffset,
      rows.length,
      from.pixels,
    );
  }

  reluBackward(d: Float32Array, a: Float32Array): void {
    this.#check(d, a);
    this.#k.relu_mask(d.byteOffset, a.byteOffset, d.length);
  }

  roundedProducts(
    sums: Float64Array,
    a: Float32Array,
    d: Float32Array,
    inverse: Float64Array,
    rounders: Float64Array,
    rows: number,
  ): void {
    this.#check(sums, a, d, inverse, rounders);
    this.#k.rounded_products(
      sums.byteOffset,
      a.byteOffset,
      d.byteOffset,
      inverse.byteOffset,
      rounders.byteOffset,
      rows,
      inverse.length,
      rounders.length,
    );
  }

  colsum(dst: Float32Array, src: Float32Array, rows: number, accumulate = false): void {
    this.#check(dst, src);
    this.#k.colsum(
      dst.byteOffset,
      src.byteOffset,
      rows,
      dst.length,
      accumulate ? FLAG_ACCUMULATE : 0,
    );
  }

  sgd(
    p: Float32Array,
    g: Float32Array,
    v: Float32Array,
    lr: number,
    momentum: number,
    scale: number,
  ): void {
    this.#check(p, g, v);
    this.#k.sgd(p.byteOffset, g.byteOffset, v.byteOffset, p.length, lr, momentum, scale);
  }

  /** Byte address of a packing area of at least `floats`, grown (and moved) when too small. */
  #scratch(which: "A" | "B", floats: number): number {
    let area = which === "A" ? this.#packA : this.#packB;
    if (area.length < floats) {
      this.#heap.free(area);
      area = this.#heap.alloc("f32", floats) as Float32Array;
      if (which === "A") this.#packA = area;
      else this.#packB = area;
    }
    return area.byteOffset;
  }

  #check(...arrays: ArrayBufferView[]): void {
    for (const x of arrays) {
      if (!this.#heap.owns(x)) {
        throw new TypeError(
          "Cannot run a WebAssembly kernel on an array outside this rank's heap: allocate it " +
            "from the heap the kernels were made for",
        );
      }
    }
  }
}

function roundUp(x: number, to: number): number {
  return Math.ceil(x / to) * to;
}
