/**
 * Reproducible sums: a sum of floating-point terms whose bits depend only on the multiset of the
 * terms, never on their order, grouping or placement (docs/dtypes.md, "Reproducible sums").
 *
 * The rule, per element: the binary digits of a dtype are cut into cells of 8 bits on a fixed
 * grid. T is the top cell of the largest finite term. Every term is rounded (to nearest, ties to
 * even) to a multiple of 2^G, G the bottom of cell T − 4 (a window of 40 bits, f64's 80: `f64`
 * keeps two accumulators); the rounded terms are summed exactly in f64 — no sum of at most
 * {@linkcode MAX_TERMS} of them loses a bit — and the exact sum is rounded once to the dtype.
 * f16's whole range fits in one window, so its sum is exact and correctly rounded.
 *
 * Two forms compute the rule, and give the same bits:
 * - the window: a first pass finds T (the max of each term's top-cell code, an exact max), a
 *   second sums the terms rounded to 2^G (one f64 per element, two for f64);
 * - the record (f32 and bf16, a few elements): every cell's rounded slice of the terms, summed,
 *   with T carried as a sum of 2^(14·(t+1)) whose top power names the largest t (exact below
 *   2^14 terms), so that one pass suffices.
 * Either form is summed by an ordinary f64 sum, whose every addition is exact: any algorithm, in
 * any order, over any grouping, gives the same accumulators.
 *
 * ±∞ and NaN travel as themselves through the f64 sums: a NaN or both infinities give NaN, one
 * infinity gives it. A zero result is +0, whatever the zeros' signs.
 * @module
 */

import { dtypeOf, type TypedArray } from "./elements.ts";
import { memoryOf } from "./memory_owners.ts";
import { REPRODUCIBLE_WASM_BASE64 } from "./reproducible_wasm_bytes.generated.ts";
import { REPRODUCIBLE_STEPS } from "./reproducible_wat.ts";

/** The dtypes a reproducible sum takes. */
export type ReproducibleDtype = "f32" | "f64" | "f16" | "bf16";

/** Most terms one element's reproducible sum may have (every rank's together). */
export const MAX_TERMS = 8192;

/** Bits per cell of the grid, and cells in a window (one accumulator's). */
const CELL = 8, WINDOW = 5;
/** Spacing of the record's top-cell powers: 2^14 > MAX_TERMS, so terms never carry into the next. */
const PRESENCE = 14;
/** 1.5·2^52: added to and taken from a value below 2^51, it rounds to an integer, ties to even. */
const ROUNDER = 1.5 * 2 ** 52;

/** How each dtype's terms become accumulators. */
interface Scheme {
  /** Exponent of the dtype's least bit (its smallest subnormal). */
  base: number;
  /** Cells on its grid. */
  cells: number;
  /** f64 accumulators per element in the window form. */
  limbs: number;
  /** Whether it needs the first pass (f16 does not: its one window is every bit). */
  windowed: boolean;
  /** Whether the record form serves it (f64's grid is too long for one). */
  recorded: boolean;
}

const SCHEMES: Readonly<Record<ReproducibleDtype, Scheme>> = {
  f32: { base: -149, cells: 35, limbs: 1, windowed: true, recorded: true },
  bf16: { base: -133, cells: 33, limbs: 1, windowed: true, recorded: true },
  f16: { base: -24, cells: 5, limbs: 1, windowed: false, recorded: false },
  f64: { base: -1074, cells: 263, limbs: 2, windowed: true, recorded: false },
};

/** Whether `dtype` has reproducible sums. */
export function isReproducible(dtype: string): dtype is ReproducibleDtype {
  return dtype in SCHEMES;
}

/** The dtype of a reproducible sum's terms (a TypeError for i32, whose sums are exact anyway). */
function schemeOf(view: TypedArray): Scheme {
  const dtype = dtypeOf(view);
  if (!isReproducible(dtype)) {
    throw new TypeError(`Cannot sum ${dtype} reproducibly: f32, f64, f16 and bf16 can`);
  }
  return SCHEMES[dtype];
}

/** How a call of `count` elements of `dtype` travels: its passes and their arrays. */
export interface ReproduciblePlan {
  /** Elements of top-cell codes of the first pass (bf16 words, f32 for f64), or 0: no first pass. */
  codes: number;
  /** Dtype of the codes. */
  codeDtype: "bf16" | "f32";
  /** f64 accumulators per element of the summing pass. */
  width: number;
  /** Whether the summing pass carries records (one pass) rather than window sums. */
  recorded: boolean;
}

/** Elements up to which a call of f32 or bf16 sums records in one pass (a record is 37 f64s). */
export const RECORD_ELEMENTS = 16;

/** The passes of a reproducible sum of `count` elements of `dtype`. */
export function planOf(dtype: ReproducibleDtype, count: number): ReproduciblePlan {
  const s = SCHEMES[dtype];
  const recorded = s.recorded && count <= RECORD_ELEMENTS;
  return {
    codes: s.windowed && !recorded ? count : 0,
    codeDtype: dtype === "f64" ? "f32" : "bf16",
    width: recorded ? s.cells + 2 : s.limbs,
    recorded,
  };
}

/** Raw bits of a view's elements, for exponents: 16-bit words of halves, 32-bit ones otherwise. */
function bitsOf(view: TypedArray): Uint16Array | Uint32Array {
  return view.BYTES_PER_ELEMENT === 2
    ? new Uint16Array(view.buffer, view.byteOffset, view.length)
    : new Uint32Array(view.buffer, view.byteOffset, view.length * view.BYTES_PER_ELEMENT / 4);
}

/** Exponent of the leading bit of a nonzero integer below 2^32. */
const log2 = (m: number) => 31 - Math.clz32(m);

/**
 * The top cell of element `i` of a view of `dtype` plus one, from its bits: 0 for a zero, an
 * infinity or a NaN (which take no part in T).
 */
function codeAt(dtype: ReproducibleDtype, bits: Uint16Array | Uint32Array, i: number): number {
  let e: number;
  if (dtype === "f32") {
    const u = bits[i], field = (u >>> 23) & 255, m = u & 0x7fffff;
    if (field === 255 || (field === 0 && m === 0)) return 0;
    e = field === 0 ? log2(m) - 149 : field - 127;
  } else if (dtype === "bf16") {
    const w = bits[i], field = (w >>> 7) & 255, m = w & 0x7f;
    if (field === 255 || (field === 0 && m === 0)) return 0;
    e = field === 0 ? log2(m) - 133 : field - 127;
  } else if (dtype === "f64") {
    const hi = bits[2 * i + 1], lo = bits[2 * i], field = (hi >>> 20) & 2047, m = hi & 0xfffff;
    if (field === 2047 || (field === 0 && m === 0 && lo === 0)) return 0;
    e = field !== 0 ? field - 1023 : (m !== 0 ? 32 + log2(m) : log2(lo)) - 1074;
  } else return 0;
  return ((e - SCHEMES[dtype].base) >> 3) + 1;
}

/** `x` · 2^k, exact wherever the result is a normal f64 (two steps where 2^k is not one). */
function scaled(x: number, k: number): number {
  return k > 1000
    ? x * 2 ** 1000 * 2 ** (k - 1000)
    : k < -1000
    ? x * 2 ** -1000 * 2 ** (k + 1000)
    : x * 2 ** k;
}

/** Value of element `i` of `view` (bf16 words decoded). */
function valueAt(view: TypedArray, bits: Uint16Array | Uint32Array, i: number, bf16: boolean) {
  if (!bf16) return view[i];
  F32_BITS[0] = bits[i] << 16;
  return F32[0];
}
const F32 = new Float32Array(1), F32_BITS = new Uint32Array(F32.buffer);

/** Checks that `terms` holds whole terms of `count` elements, and how many. */
function termsIn(terms: TypedArray, count: number): number {
  const k = count === 0 ? 0 : terms.length / count;
  if (!Number.isInteger(k)) {
    throw new RangeError(
      `Cannot sum ${terms.length} elements as terms of ${count}: the terms must be whole`,
    );
  }
  if (k > MAX_TERMS) {
    throw new RangeError(
      `Cannot sum ${k} terms reproducibly: at most ${MAX_TERMS} terms per element`,
    );
  }
  return k;
}

/**
 * `codes[i]` ← the largest code of element i over the terms stacked in `terms` (`count` elements
 * each): the first pass's contribution. `codes` is bf16 words (f32 for f64's terms).
 */
export function codesOf(terms: TypedArray, count: number, codes: Uint16Array | Float32Array): void {
  const dtype = dtypeOf(terms) as ReproducibleDtype, bits = bitsOf(terms);
  const k = termsIn(terms, count);
  if (dtype === "f32" && codes instanceof Uint16Array) {
    return f32Codes(bits as Uint32Array, k, count, codes);
  }
  for (let i = 0; i < count; i++) {
    let top = 0;
    for (let j = 0; j < k; j++) top = Math.max(top, codeAt(dtype, bits, j * count + i));
    // A bf16 word of a small integer is its f32 bits' top half.
    if (codes instanceof Uint16Array) {
      F32[0] = top;
      codes[i] = F32_BITS[0] >>> 16;
    } else codes[i] = top;
  }
}

/** The code of element `i` of the first pass's result. */
function codeOf(codes: Uint16Array | Float32Array | undefined, i: number): number {
  if (!codes) return 0;
  if (codes instanceof Float32Array) return codes[i];
  F32_BITS[0] = codes[i] << 16;
  return F32[0];
}

/**
 * f32's fast path (the default dtype, where a call's time goes): its codes by exponent field, the
 * bf16 word of each code and back, and each code's rounding constant, made once.
 */
const F32_PATH = (() => {
  const s = SCHEMES.f32;
  const fieldCode = new Uint8Array(256);
  for (let field = 1; field < 255; field++) fieldCode[field] = ((field - 127 - s.base) >> 3) + 1;
  const word = new Uint16Array(s.cells + 1), code = new Uint8Array(65536);
  const magic = new Float64Array(s.cells + 1);
  for (let c = 0; c <= s.cells; c++) {
    F32[0] = c;
    word[c] = F32_BITS[0] >>> 16;
    code[word[c]] = c;
    magic[c] = c === 0 ? 0 : ROUNDER * 2 ** (s.base + CELL * (c - WINDOW));
  }
  return { fieldCode, word, code, magic };
})();

/** The f32 kernels' exports (reproducible_wat.ts). */
interface F32Kernels {
  f32_codes(codes: number, src: number, n: number): void;
  f32_window(acc: number, src: number, codes: number, n: number): void;
  f32_store(dst: number, acc: number, n: number, divisor: number): void;
}

/** Below this many elements the JS loops are quicker than a call into WebAssembly. */
const SHORT = 64;
let f32Module: WebAssembly.Module | undefined;
const f32Instances = new WeakMap<WebAssembly.Memory, F32Kernels>();

/**
 * The f32 kernels over the shared memory every view of a call lives in (a rank's heap), or
 * undefined: short calls, and views elsewhere, run the JS loops (the same bits).
 */
function f32Kernels(n: number, ...views: ArrayBufferView[]): F32Kernels | undefined {
  if (n < SHORT) return undefined;
  const memory = memoryOf(views[0].buffer);
  if (!memory || !(memory.buffer instanceof SharedArrayBuffer)) return undefined;
  if (views.some((v) => memoryOf(v.buffer) !== memory)) return undefined;
  let kernels = f32Instances.get(memory);
  if (!kernels) {
    f32Module ??= new WebAssembly.Module(
      Uint8Array.from(atob(REPRODUCIBLE_WASM_BASE64), (c) => c.charCodeAt(0)),
    );
    kernels = new WebAssembly.Instance(f32Module, { mem: { mem: memory } })
      .exports as unknown as F32Kernels;
    f32Instances.set(memory, kernels);
  }
  return kernels;
}

/** Elements a kernel's vector loop covered of `n` (the rest is the JS loop's). */
const covered = (n: number, step: number) => n - (n % step);

/** {@linkcode codesOf} of f32 terms (their bits), each loop on one kind of array. */
function f32Codes(bits: Uint32Array, k: number, count: number, codes: Uint16Array): void {
  const { word, fieldCode } = F32_PATH, end = k * count;
  if (k === 1) {
    const wasm = f32Kernels(count, bits, codes);
    wasm?.f32_codes(codes.byteOffset, bits.byteOffset, count);
    const from = wasm ? covered(count, REPRODUCIBLE_STEPS.codes) : 0;
    for (let i = from; i < count; i++) {
      // f32Code, written out: this loop is where a large call's first pass goes.
      const u = bits[i], field = (u >>> 23) & 255, m = u & 0x7fffff;
      codes[i] = word[field !== 0 ? fieldCode[field] : m === 0 ? 0 : (log2(m) >> 3) + 1];
    }
    return;
  }
  for (let i = 0; i < count; i++) {
    let top = 0;
    for (let at = i; at < end; at += count) {
      const c = f32Code(bits[at]);
      if (c > top) top = c;
    }
    codes[i] = word[top];
  }
}

/** {@linkcode windowOf} of f32 terms. */
function f32Window(
  terms: Float32Array,
  k: number,
  count: number,
  codes: Uint16Array,
  acc: Float64Array,
): void {
  const { code, magic } = F32_PATH, end = k * count;
  if (k === 1) {
    const wasm = f32Kernels(count, acc, terms, codes);
    wasm?.f32_window(acc.byteOffset, terms.byteOffset, codes.byteOffset, count);
    const from = wasm ? covered(count, REPRODUCIBLE_STEPS.window) : 0;
    for (let i = from; i < count; i++) {
      const m = magic[code[codes[i]]];
      acc[i] = (terms[i] + m) - m;
    }
    return;
  }
  for (let i = 0; i < count; i++) {
    const m = magic[code[codes[i]]];
    let sum = 0;
    for (let at = i; at < end; at += count) sum += (terms[at] + m) - m;
    acc[i] = sum;
  }
}

/** f32's code of the element whose bits are `u`. */
function f32Code(u: number): number {
  const field = (u >>> 23) & 255;
  if (field !== 0) return F32_PATH.fieldCode[field];
  const m = u & 0x7fffff;
  return m === 0 ? 0 : (log2(m) >> 3) + 1;
}

/** Exponent of the bottom of cell `cell` on a scheme's grid. */
const bottomOf = (s: Scheme, cell: number) => s.base + CELL * cell;

/**
 * `acc` ← the window sums of the terms stacked in `terms`, each rounded to 2^G of its element's
 * code in `codes` (the first pass's max; none for f16, whose window is fixed): `limbs` f64s per
 * element — the sum itself, or f64's top and bottom 40 bits as integers.
 */
export function windowOf(
  terms: TypedArray,
  count: number,
  codes: Uint16Array | Float32Array | undefined,
  acc: Float64Array,
): void {
  const s = schemeOf(terms), bits = bitsOf(terms), bf16 = terms instanceof Uint16Array;
  const k = termsIn(terms, count);
  if (terms instanceof Float32Array && codes instanceof Uint16Array) {
    return f32Window(terms, k, count, codes, acc);
  }
  acc.fill(0, 0, count * s.limbs);
  for (let i = 0; i < count; i++) {
    const top = s.windowed ? codeOf(codes, i) - 1 : WINDOW - 1;
    const g = bottomOf(s, top - (WINDOW * s.limbs - 1));
    if (s.limbs === 1) {
      // x + M − M rounds x to a multiple of 2^G (M = 1.5·2^(G+52)); ±∞ and NaN pass through.
      const m = top < 0 ? 0 : ROUNDER * 2 ** g;
      let sum = 0;
      for (let j = 0; j < k; j++) sum += (valueAt(terms, bits, j * count + i, bf16) + m) - m;
      acc[i] = sum;
      continue;
    }
    // f64: the term in units of 2^G, split into multiples of 2^40 and what is left (exact).
    let hi = 0, lo = 0;
    for (let j = 0; j < k; j++) {
      const x = terms[j * count + i];
      if (!Number.isFinite(x)) {
        hi += x;
        continue;
      }
      const y = scaled(x, -g), h = (y * 2 ** -40 + ROUNDER) - ROUNDER;
      hi += h;
      lo += ((y - h * 2 ** 40) + ROUNDER) - ROUNDER;
    }
    acc[2 * i] = hi;
    acc[2 * i + 1] = lo;
  }
}

/** `out[i]` ← element i of the summed window accumulators `acc`, divided by `divisor`, rounded. */
export function fromWindow(
  acc: Float64Array,
  codes: Uint16Array | Float32Array | undefined,
  out: TypedArray,
  divisor?: number,
): void {
  divisor ??= 1;
  const s = schemeOf(out);
  if (out instanceof Float32Array || out instanceof Float16Array) {
    // One accumulator, rounded once as the view stores it; a zero result is +0.
    const wasm = out instanceof Float32Array ? f32Kernels(out.length, out, acc) : undefined;
    wasm?.f32_store(out.byteOffset, acc.byteOffset, out.length, divisor);
    const from = wasm ? covered(out.length, REPRODUCIBLE_STEPS.store) : 0;
    for (let i = from; i < out.length; i++) out[i] = acc[i] / divisor + 0;
    return;
  }
  for (let i = 0; i < out.length; i++) {
    let sum = acc[i * s.limbs];
    if (s.limbs === 2) {
      const top = codeOf(codes, i) - 1;
      sum = top < 0 ? sum : scaled(sum * 2 ** 40 + acc[2 * i + 1], bottomOf(s, top - 9));
    }
    store(out, i, sum / divisor);
  }
}

/**
 * `rec` ← the records of the terms stacked in `terms` (f32 or bf16): per element, the sum of
 * 2^(14·(t+1)) over its terms' top cells t, the sum of its infinities and NaNs, and per cell the
 * sum of the terms' rounded slices in it (the four cells below a term's top: no window reaches
 * further down).
 */
export function recordsOf(terms: TypedArray, count: number, rec: Float64Array): void {
  const s = schemeOf(terms), bits = bitsOf(terms), bf16 = terms instanceof Uint16Array;
  const dtype = dtypeOf(terms) as ReproducibleDtype;
  const k = termsIn(terms, count), width = s.cells + 2, magic = cellRounders(s);
  rec.fill(0, 0, count * width);
  for (let j = 0; j < k; j++) {
    for (let i = 0; i < count; i++) {
      const at = j * count + i, x = valueAt(terms, bits, at, bf16), r = i * width;
      const code = codeAt(dtype, bits, at);
      if (code === 0) {
        if (x !== 0) rec[r + 1] += x;
        continue;
      }
      rec[r] += PRESENCE_POWERS[code];
      let rest = x;
      for (let cell = code - 1; cell >= Math.max(0, code - WINDOW); cell--) {
        const m = magic[cell];
        const slice = (rest + m) - m;
        rec[r + 2 + cell] += slice;
        rest -= slice;
      }
    }
  }
}

/** 2^(14·code) for each code a record's presence sum adds. */
const PRESENCE_POWERS = Float64Array.from({ length: 36 }, (_, code) => 2 ** (PRESENCE * code));
const F64 = new Float64Array(1), F64_WORDS = new Uint32Array(F64.buffer);

/** 1.5·2^(52 + the bottom of each cell) of a scheme: what rounds a term to the cell's grid. */
const ROUNDERS = new Map<Scheme, Float64Array>();
function cellRounders(s: Scheme): Float64Array {
  let table = ROUNDERS.get(s);
  if (!table) {
    table = Float64Array.from({ length: s.cells }, (_, cell) => ROUNDER * 2 ** bottomOf(s, cell));
    ROUNDERS.set(s, table);
  }
  return table;
}

/** `out[i]` ← element i of the summed records `rec`, divided by `divisor`, rounded. */
export function fromRecords(rec: Float64Array, out: TypedArray, divisor?: number): void {
  divisor ??= 1;
  const s = schemeOf(out), width = s.cells + 2;
  for (let i = 0; i < out.length; i++) {
    const r = i * width, presence = rec[r];
    let sum = 0;
    if (presence > 0) {
      // The largest t is the top power of the presence sum: its exponent over 14, less one.
      F64[0] = presence;
      const top = Math.floor(((F64_WORDS[1] >>> 20) - 1023) / PRESENCE) - 1;
      for (let cell = Math.max(0, top - (WINDOW - 1)); cell <= top; cell++) {
        sum += rec[r + 2 + cell];
      }
    }
    store(out, i, (sum + rec[r + 1]) / divisor);
  }
}

/** `out[i]` ← `x` rounded once to `out`'s dtype (bf16 from f64 directly, not through f32). */
function store(out: TypedArray, i: number, x: number): void {
  if (!(out instanceof Uint16Array)) {
    out[i] = x + 0; // a zero result is +0
    return;
  }
  // bf16: round to f32, then to bf16; where f32 landed on a bf16 halfway point, the f64 value
  // says which way the halfway point goes (rounding twice would take it to even).
  F32[0] = x;
  const bits = F32_BITS[0];
  if (x !== x) {
    out[i] = (bits >>> 16) | 0x40;
    return;
  }
  let word = (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
  if ((bits & 0xffff) === 0x8000 && F32[0] !== x) {
    // Away from zero when |x| is above the halfway point, toward it when below.
    word = (bits >>> 16) + (Math.abs(x) > Math.abs(F32[0]) ? 1 : 0);
  }
  out[i] = word === 0x8000 ? 0 : word;
}

/**
 * The reproducible sum of terms, on this rank alone: `out[i]` ← the sum over the terms stacked in
 * `terms` (each `out.length` elements, one after another) of element i, by the rule every
 * reproducible collective follows, so the same terms give the same bits here, spread over the
 * ranks of a reproducible allreduce, or in any order.
 *
 * @example Bits that do not depend on the order
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { reproducibleSum } from "./reproducible.ts";
 *
 * const a = new Float32Array(1), b = new Float32Array(1);
 * reproducibleSum(Float32Array.of(1e8, 1, -1e8, 0.5), a);
 * reproducibleSum(Float32Array.of(0.5, -1e8, 1, 1e8), b);
 * assertEquals([a[0], b[0]], [1.5, 1.5]);
 * ```
 */
export function reproducibleSum(terms: TypedArray, out: TypedArray, divisor?: number): void {
  const s = schemeOf(out), dtype = dtypeOf(out);
  if (dtypeOf(terms) !== dtype) {
    throw new TypeError(`Cannot sum ${dtypeOf(terms)} terms into ${dtype}`);
  }
  const n = out.length;
  const codes = !s.windowed
    ? undefined
    : dtype === "f64"
    ? new Float32Array(n)
    : new Uint16Array(n);
  if (codes) codesOf(terms, n, codes);
  const acc = new Float64Array(n * s.limbs);
  windowOf(terms, n, codes, acc);
  fromWindow(acc, codes, out, divisor);
}
