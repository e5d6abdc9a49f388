/**
 * The WebAssembly text of the half-precision reduction kernels (`f16`, `bf16`), for
 * reduce_wat.ts. WebAssembly has no 16-bit float arithmetic: each v128 of eight 16-bit words is
 * widened to two f32x4 vectors, reduced in f32 and rounded back to nearest-even, so a step rounds
 * once, as a native half-precision add would (f32 holds more than twice either type's
 * precision, so rounding first to f32 never changes the result). A reduction splits a vector into
 * its even and odd words (its i32 lanes' bottom and top halves), which a shift or a mask widens in
 * place; the conversions of whole arrays (`to_`, `from_`) keep the words in order instead.
 * @module
 */

import type { KernelOp } from "./elements.ts";

/** The half-precision dtypes. */
export type HalfDtype = "f16" | "bf16";

/** A constant in every i32 lane, read from a local that {@linkcode constants} sets up. */
const splat = (v: number) => `(local.get $k${v.toString(16)})`;

/**
 * Declarations and set-up of the constant locals `body` reads: set once before the loops, since
 * V8 would otherwise rebuild each `v128.const` on every iteration.
 */
function constants(body: string): { locals: string; setup: string } {
  const hex = [...new Set(body.match(/\$k[0-9a-f]+/g) ?? [])].map((k) => k.slice(2));
  return {
    locals: hex.map((h) => `(local $k${h} v128)`).join(" "),
    setup: hex.map((h) =>
      `(local.set $k${h} (v128.const i32x4 ${Array(4).fill(`0x${h}`).join(" ")}))`
    )
      .join("\n    "),
  };
}
const get = (name: string) => `(local.get $${name})`;

/**
 * f32 lanes in `$f` from the 16-bit words in the top half of the i32 lanes of `$w`, whose bottom
 * halves are zero (f16's ignores them).
 */
const WIDEN: Record<HalfDtype, string> = {
  bf16: `(local.set $f ${get("w")})`,
  // Sign, exponent and mantissa moved to f32's places and scaled by 2^112: the scale re-biases
  // normals and subnormals alike; exponent 31 (infinity, NaN) then gets 112 more, f32's 255.
  f16: `(local.set $t (v128.and (i32x4.shr_s ${get("w")} (i32.const 3)) ${splat(0x8fffe000)}))
      (local.set $f (i32x4.add
        (f32x4.mul ${get("t")} ${splat(0x77800000)})
        (v128.and
          (i32x4.eq (v128.and ${get("w")} ${splat(0x7c000000)}) ${splat(0x7c000000)})
          ${splat(0x38000000)})))`,
};

/** The 16-bit words nearest the f32 lanes of `$f`, in the bottom halves of `$w` (uses `$t`). */
const NARROW: Record<HalfDtype, string> = {
  // Round to nearest even by adding 0x7fff plus the kept part's low bit; NaNs stay quiet NaNs.
  bf16: `(local.set $t (i32x4.shr_u ${get("f")} (i32.const 16)))
      (local.set $w (v128.bitselect
        (v128.or ${get("t")} ${splat(0x40)})
        (i32x4.shr_u
          (i32x4.add ${get("f")} (i32x4.add ${splat(0x7fff)} (v128.and ${get("t")} ${splat(1)})))
          (i32.const 16))
        (f32x4.ne ${get("f")} ${get("f")})))`,
  // |x| in `$t`. Normals are re-biased and rounded by adding 0xfff plus the kept part's low bit;
  // capping that at 0x7c00 turns overflow (and any |x| too small, below) into infinity; results
  // below 2^-14 come from an f32 add that lines the f16 subnormal step up with f32's last bit;
  // NaNs get the quiet bit, and every result its sign.
  f16: `(local.set $t (v128.and ${get("f")} ${splat(0x7fffffff)}))
      (local.set $w (v128.or
        (v128.or
          (v128.bitselect
            (i32x4.sub (f32x4.add ${get("t")} ${splat(0x3f000000)}) ${splat(0x3f000000)})
            (i32x4.min_u
              (i32x4.shr_u
                (i32x4.add (i32x4.add ${get("t")} ${splat(0xc8000fff)})
                  (v128.and (i32x4.shr_u ${get("t")} (i32.const 13)) ${splat(1)}))
                (i32.const 13))
              ${splat(0x7c00)})
            (i32x4.lt_s ${get("t")} ${splat(0x38800000)}))
          (v128.and (i32x4.gt_s ${get("t")} ${splat(0x7f800000)}) ${splat(0x200)}))
        (i32x4.shr_u (v128.and ${get("f")} ${splat(0x80000000)}) (i32.const 16))))`,
};

/** bf16 words rounded to nearest even from f32 lanes `f`, in the top halves of its i32 lanes. */
const roundBf16 = (f: string) =>
  `(i32x4.add ${f} (i32x4.add ${splat(0x7fff)} (v128.and (i32x4.shr_u ${f} (i32.const 16)) ${
    splat(1)
  })))`;

/**
 * The f16 conversions for words known to be finite: no infinity or NaN to carry across, so a
 * widening is a scale alone, and a result (finite, or past f16's range) is rounded by f32's own
 * adder: adding 2^13 times its f16 exponent's unit (2^-14's at least, for subnormals) drops every
 * bit below f16's precision, to nearest even; a scale by 2^-112 then puts the f16 bits in place
 * (an f32 subnormal for an f16 one), and a cap at 0x7c00 turns overflow into infinity.
 */
const WIDEN_FINITE_F16 = `(local.set $f (f32x4.mul
        (v128.and (i32x4.shr_s ${get("w")} (i32.const 3)) ${splat(0x8fffe000)})
        ${splat(0x77800000)}))`;
const roundedF16 = `(f32x4.sub (f32x4.add ${get("t")} ${get("c")}) ${get("c")})`;
const NARROW_FINITE_F16 = `(local.set $t (v128.and ${get("f")} ${splat(0x7fffffff)}))
      (local.set $c (i32x4.add
        (i32x4.max_s (v128.and ${get("t")} ${splat(0x7f800000)}) ${splat(0x38800000)})
        ${splat(13 << 23)}))
      (local.set $w (v128.or
        (i32x4.min_u
          (i32x4.shr_u
            (f32x4.mul ${roundedF16} ${splat(0x07800000)})
            (i32.const 13))
          ${splat(0x7c00)})
        (i32x4.shr_u (v128.and ${get("f")} ${splat(0x80000000)}) (i32.const 16))))`;

/**
 * `$w` ← eight words from `$fe` (even) and `$fo` (odd) by `narrow`, which leaves a word in each
 * i32 lane's bottom half (uses `$x`).
 */
const pairOf = (narrow: string) =>
  `(local.set $f ${get("fo")})
      ${narrow}
      (local.set $x (i32x4.shl ${get("w")} (i32.const 16)))
      (local.set $f ${get("fe")})
      ${narrow}
      (local.set $w (v128.or ${get("w")} ${get("x")}))`;

/**
 * How a reduction widens words (`$w` → `$f`) and narrows pairs: `$w` ← eight words, the even
 * ones nearest the f32 lanes of `$fe`, the odd ones nearest `$fo`.
 */
interface Codec {
  /** The odd words of a v128 in the top halves of its i32 lanes, as `widen` takes them. */
  odd: (v: string) => string;
  widen: string;
  narrowPair: string;
}
const CODEC: Record<HalfDtype, Codec> = {
  // No NaN step: a reduction's operands came from bf16 words, so a NaN result (an operand's
  // payload, or the canonical NaN) has a zero bottom half, which rounding leaves alone.
  bf16: {
    odd: (v) => `(v128.and ${v} ${splat(0xffff0000)})`,
    widen: WIDEN.bf16,
    narrowPair: `(local.set $w (v128.or
        (i32x4.shr_u ${roundBf16(get("fe"))} (i32.const 16))
        (v128.and ${roundBf16(get("fo"))} ${splat(0xffff0000)})))`,
  },
  f16: { odd: (v) => v, widen: WIDEN.f16, narrowPair: pairOf(NARROW.f16) },
};
const FINITE_F16: Codec = {
  odd: (v) => v,
  widen: WIDEN_FINITE_F16,
  narrowPair: pairOf(NARROW_FINITE_F16),
};

const F32_OP: Record<KernelOp, string> = {
  sum: "f32x4.add",
  prod: "f32x4.mul",
  max: "f32x4.max",
  min: "f32x4.min",
};

const LOCALS = "(local $i i32) " +
  ["va", "vb", "w", "f", "t", "x", "lo", "kv", "fe", "fo", "c"].map((v) => `(local $${v} v128)`)
    .join(" ");

/** The even words of the v128 `v` (its i32 lanes' bottom halves), moved to the top halves. */
const even = (v: string) => `(i32x4.shl ${v} (i32.const 16))`;
const low = (v: string) => even(`(i32x4.extend_low_i16x8_u ${get(v)})`);
const high = (v: string) => even(`(i32x4.extend_high_i16x8_u ${get(v)})`);

/** `$f` ← the f32 lanes of the words in the top halves of the i32 lanes `w`. */
const widen = (widening: string, w: string) =>
  `(local.set $w ${w})
      ${widening}`;

/** `$w` ← the words nearest `a op b` for the words of `$va` and `$vb`, even and odd apart. */
function reduceWords(codec: Codec, op: KernelOp): string {
  const pair = (part: (v: string) => string, into: string) =>
    `${widen(codec.widen, part(get("va")))}
      (local.set $x ${get("f")})
      ${widen(codec.widen, part(get("vb")))}
      (local.set $${into} (${F32_OP[op]} ${get("x")} ${get("f")}))`;
  return `${pair(even, "fe")}
      ${pair(codec.odd, "fo")}
      ${codec.narrowPair}`;
}

/** `$w` ← the words nearest `a / $kv` for the words of `$va`, even and odd apart. */
function divideWords(codec: Codec): string {
  return `${widen(codec.widen, even(get("va")))}
      (local.set $fe (f32x4.div ${get("f")} ${get("kv")}))
      ${widen(codec.widen, codec.odd(get("va")))}
      (local.set $fo (f32x4.div ${get("f")} ${get("kv")}))
      ${codec.narrowPair}`;
}

/**
 * `work` in the dtype's codec; for f16 in the finite one unless one of `words` (v128s of eight)
 * is infinite or NaN, which is rare enough to decide once per eight elements.
 */
function byWords(dtype: HalfDtype, words: string[], work: (codec: Codec) => string): string {
  if (dtype === "bf16") return work(CODEC.bf16);
  const largest = words.map((w) => `(v128.and ${w} ${splat(0x7fff7fff)})`)
    .reduce((a, b) => `(i16x8.max_u ${a} ${b})`);
  return `(if (v128.any_true (i16x8.gt_s ${largest} ${splat(0x7bff7bff)}))
        (then ${work(CODEC.f16)})
        (else ${work(FINITE_F16)}))`;
}

/** A pointer parameter and how far it moves per element (its element's bytes). */
type Pointer = [name: string, bytes: number];

/**
 * Eight elements per iteration while eight remain (`vector`), then one at a time (`scalar`);
 * each pointer moves by its element's bytes times the elements done.
 */
function loops(pointers: Pointer[], vector: string, scalar: string): string {
  const step = (elements: number) =>
    pointers.map(([p, bytes]) =>
      `(local.set $${p} (i32.add (local.get $${p}) (i32.const ${elements * bytes})))`
    ).join("\n      ");
  return `
    (local.set $i (i32.const 0))
    (block $done8 (loop $loop8
      (br_if $done8 (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $n)))
      ${vector}
      ${step(8)}
      (local.set $i (i32.add (local.get $i) (i32.const 8)))
      (br $loop8)))
    (block $done1 (loop $loop1
      (br_if $done1 (i32.ge_u (local.get $i) (local.get $n)))
      ${scalar}
      ${step(1)}
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $loop1)))`;
}

/** One word at `pointer`, in every i32 lane (an even word, as the scalar tails read it). */
const word = (memory: string, pointer: string) =>
  `(i32x4.splat (i32.load16_u $${memory}_mem (local.get $${pointer})))`;
/** Stores the eight words in the bottom halves of `$lo` (low four) and `$w` (high four) at `$d`. */
const storeWords = `(v128.store $dst_mem (local.get $d) (i16x8.narrow_i32x4_u ${get("lo")} ${
  get("w")
}))`;
/** Stores the bottom half of lane 0 of `$w` (an even word) at `$d`. */
const storeWord = `(i32.store16 $dst_mem (local.get $d) (i32x4.extract_lane 0 ${get("w")}))`;

/** A function `name(params…)` of `body`, with the locals and constants it uses. */
function func(name: string, params: string, body: string, setup = ""): string {
  const k = constants(body);
  return `
  (func (export "${name}") ${params}
    ${LOCALS} ${k.locals}
    ${k.setup}${setup}${body})`;
}

/** `<op>_<dtype>(dst, a, b, n)`: `dst[i] = a[i] op b[i]`, in f32, rounded back. */
export function halfReduceFunc(op: KernelOp, dtype: HalfDtype): string {
  const body = loops(
    [["d", 2], ["a", 2], ["b", 2]],
    `(local.set $va (v128.load $a_mem (local.get $a)))
      (local.set $vb (v128.load $b_mem (local.get $b)))
      ${byWords(dtype, [get("va"), get("vb")], (codec) => reduceWords(codec, op))}
      (v128.store $dst_mem (local.get $d) ${get("w")})`,
    `(local.set $va ${word("a", "a")})
      (local.set $vb ${word("b", "b")})
      ${reduceWords(CODEC[dtype], op)}
      ${storeWord}`,
  );
  return func(
    `${op}_${dtype}`,
    "(param $d i32) (param $a i32) (param $b i32) (param $n i32)",
    body,
  );
}

/** `div_<dtype>(dst, n, k)`: `dst[i] /= k`, in f32, rounded back (the second half of `avg`). */
export function halfDivFunc(dtype: HalfDtype): string {
  const body = loops(
    [["d", 2]],
    `(local.set $va (v128.load $dst_mem (local.get $d)))
      ${byWords(dtype, [get("va")], divideWords)}
      (v128.store $dst_mem (local.get $d) ${get("w")})`,
    `(local.set $va ${word("dst", "d")})
      ${divideWords(CODEC[dtype])}
      ${storeWord}`,
  );
  return func(
    `div_${dtype}`,
    "(param $d i32) (param $n i32) (param $k f32)",
    body,
    "\n    (local.set $kv (f32x4.splat (local.get $k)))",
  );
}

/**
 * `$w` ← the words nearest the f32 lanes `x`; with `storeResidual`, also stores what rounding
 * took off (`x` − the words' values, an f32x4 expression) where it says (uses `$x`).
 */
function narrowLanes(
  dtype: HalfDtype,
  x: string,
  storeResidual?: (residual: string) => string,
): string {
  if (!storeResidual) return `(local.set $f ${x})\n      ${NARROW[dtype]}`;
  return `(local.set $x ${x})
      (local.set $f ${get("x")})
      ${NARROW[dtype]}
      (local.set $va ${get("w")})
      ${widen(WIDEN[dtype], even(get("w")))}
      ${storeResidual(`(f32x4.sub ${get("x")} ${get("f")})`)}
      (local.set $w ${get("va")})`;
}

/**
 * `to_<dtype>(dst, a, n)`: the words nearest the f32s at `a`. `to_<dtype>_feedback(dst, a, b, n)`
 * rounds `a + b` and leaves the rounding error in `b` (error feedback: `b` is the residual).
 */
export function halfNarrowFunc(dtype: HalfDtype, feedback: boolean): string {
  const load = (memory: string, offset: number) =>
    `(v128.load $${memory}_mem offset=${offset} (local.get $${memory}))`;
  const lanes = (offset: number) =>
    narrowLanes(
      dtype,
      feedback ? `(f32x4.add ${load("a", offset)} ${load("b", offset)})` : load("a", offset),
      feedback ? (r) => `(v128.store $b_mem offset=${offset} (local.get $b) ${r})` : undefined,
    );
  const scalar = (memory: string) => `(f32.load $${memory}_mem (local.get $${memory}))`;
  // The scalar tail runs on a splat and stores lane 0 of its residual: only it is this element's.
  const one = narrowLanes(
    dtype,
    `(f32x4.splat ${feedback ? `(f32.add ${scalar("a")} ${scalar("b")})` : scalar("a")})`,
    feedback ? (r) => `(f32.store $b_mem (local.get $b) (f32x4.extract_lane 0 ${r}))` : undefined,
  );
  const body = loops(
    feedback ? [["d", 2], ["a", 4], ["b", 4]] : [["d", 2], ["a", 4]],
    `${lanes(0)}
      (local.set $lo ${get("w")})
      ${lanes(16)}
      ${storeWords}`,
    `${one}
      ${storeWord}`,
  );
  return func(
    `to_${dtype}${feedback ? "_feedback" : ""}`,
    `(param $d i32) (param $a i32)${feedback ? " (param $b i32)" : ""} (param $n i32)`,
    body,
  );
}

/** `from_<dtype>(dst, a, n)`: the f32 values of the words at `a`. */
export function halfWidenFunc(dtype: HalfDtype): string {
  const body = loops(
    [["d", 4], ["a", 2]],
    `(local.set $va (v128.load $a_mem (local.get $a)))
      ${widen(WIDEN[dtype], low("va"))}
      (v128.store $dst_mem (local.get $d) ${get("f")})
      ${widen(WIDEN[dtype], high("va"))}
      (v128.store $dst_mem offset=16 (local.get $d) ${get("f")})`,
    `${widen(WIDEN[dtype], even(word("a", "a")))}
      (f32.store $dst_mem (local.get $d) (f32x4.extract_lane 0 ${get("f")}))`,
  );
  return func(`from_${dtype}`, "(param $d i32) (param $a i32) (param $n i32)", body);
}
