/**
 * The WebAssembly text of the half-precision reduction kernels (`f16`, `bf16`), for
 * reduce_wat.ts. WebAssembly has no 16-bit float arithmetic: each v128 of eight 16-bit words is
 * widened to two f32x4 halves, reduced in f32 and rounded back to nearest-even, so a step rounds
 * once, as a native half-precision add would (f32 holds more than twice either type's
 * precision, so rounding first to f32 never changes the result).
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

/** f32 lanes in `$f` from the 16-bit words zero-extended in the i32 lanes of `$w` (uses `$t`). */
const WIDEN: Record<HalfDtype, string> = {
  bf16: `(local.set $f (i32x4.shl ${get("w")} (i32.const 16)))`,
  // Sign, exponent and mantissa moved to f32's places and scaled by 2^112: the scale re-biases
  // normals and subnormals alike; exponent 31 (infinity, NaN) then gets 112 more, f32's 255.
  f16: `(local.set $t (v128.and
        (i32x4.shr_s (i32x4.shl ${get("w")} (i32.const 16)) (i32.const 3))
        ${splat(0x8fffffff)}))
      (local.set $f (i32x4.add
        (f32x4.mul ${get("t")} ${splat(0x77800000)})
        (v128.and
          (i32x4.eq (v128.and ${get("w")} ${splat(0x7c00)}) ${splat(0x7c00)})
          ${splat(0x38000000)})))`,
};

/** The 16-bit words nearest the f32 lanes of `$f`, in the i32 lanes of `$w` (uses `$t`). */
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

const F32_OP: Record<KernelOp, string> = {
  sum: "f32x4.add",
  prod: "f32x4.mul",
  max: "f32x4.max",
  min: "f32x4.min",
};

const LOCALS = "(local $end i32) " +
  ["va", "vb", "w", "f", "t", "x", "lo", "kv"].map((v) => `(local $${v} v128)`).join(" ");

const low = (v: string) => `(i32x4.extend_low_i16x8_u ${get(v)})`;
const high = (v: string) => `(i32x4.extend_high_i16x8_u ${get(v)})`;

/** `$w` ← the words nearest `a op b` for the words `a` and `b` (i32 lanes). */
function reduceLanes(dtype: HalfDtype, op: KernelOp, a: string, b: string): string {
  return `(local.set $w ${a})
      ${WIDEN[dtype]}
      (local.set $x ${get("f")})
      (local.set $w ${b})
      ${WIDEN[dtype]}
      (local.set $f (${F32_OP[op]} ${get("x")} ${get("f")}))
      ${NARROW[dtype]}`;
}

/** `$w` ← the words nearest `w / $kv` for the words `w` (i32 lanes). */
function divideLanes(dtype: HalfDtype, w: string): string {
  return `(local.set $w ${w})
      ${WIDEN[dtype]}
      (local.set $f (f32x4.div ${get("f")} ${get("kv")}))
      ${NARROW[dtype]}`;
}

/**
 * Eight elements per v128 while 16 bytes remain (`vector` leaves the low four words' result in
 * `$lo` and the high four's in `$w`), then one element at a time (`scalar` leaves it in lane 0 of
 * `$w`); the pointers `pointers` advance together.
 */
function loops(pointers: string[], vector: string, scalar: string): string {
  const step = (by: number) =>
    pointers.map((p) => `(local.set $${p} (i32.add (local.get $${p}) (i32.const ${by})))`).join(
      "\n      ",
    );
  return `
    (local.set $end (i32.add (local.get $d)
      (i32.and (i32.shl (local.get $n) (i32.const 1)) (i32.const -16))))
    (block $done8 (loop $loop8
      (br_if $done8 (i32.ge_u (local.get $d) (local.get $end)))
      ${vector}
      (v128.store $dst_mem (local.get $d) (i16x8.narrow_i32x4_u ${get("lo")} ${get("w")}))
      ${step(16)}
      (br $loop8)))
    (local.set $end (i32.add (local.get $end)
      (i32.and (i32.shl (local.get $n) (i32.const 1)) (i32.const 15))))
    (block $done1 (loop $loop1
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      ${scalar}
      (i32.store16 $dst_mem (local.get $d) (i32x4.extract_lane 0 ${get("w")}))
      ${step(2)}
      (br $loop1)))`;
}

const word = (memory: string, pointer: string) =>
  `(i32x4.splat (i32.load16_u $${memory}_mem (local.get $${pointer})))`;

/** `<op>_<dtype>(dst, a, b, n)`: `dst[i] = a[i] op b[i]`, in f32, rounded back. */
export function halfReduceFunc(op: KernelOp, dtype: HalfDtype): string {
  const lanes = (a: string, b: string) => reduceLanes(dtype, op, a, b);
  const body = loops(
    ["d", "a", "b"],
    `(local.set $va (v128.load $a_mem (local.get $a)))
      (local.set $vb (v128.load $b_mem (local.get $b)))
      ${lanes(low("va"), low("vb"))}
      (local.set $lo ${get("w")})
      ${lanes(high("va"), high("vb"))}`,
    lanes(word("a", "a"), word("b", "b")),
  );
  const k = constants(body);
  return `
  (func (export "${op}_${dtype}") (param $d i32) (param $a i32) (param $b i32) (param $n i32)
    ${LOCALS} ${k.locals}
    ${k.setup}${body})`;
}

/** `div_<dtype>(dst, n, k)`: `dst[i] /= k`, in f32, rounded back (the second half of `avg`). */
export function halfDivFunc(dtype: HalfDtype): string {
  const body = loops(
    ["d"],
    `(local.set $va (v128.load $dst_mem (local.get $d)))
      ${divideLanes(dtype, low("va"))}
      (local.set $lo ${get("w")})
      ${divideLanes(dtype, high("va"))}`,
    divideLanes(dtype, word("dst", "d")),
  );
  const k = constants(body);
  return `
  (func (export "div_${dtype}") (param $d i32) (param $n i32) (param $k f32)
    ${LOCALS} ${k.locals}
    ${k.setup}
    (local.set $kv (f32x4.splat (local.get $k)))${body})`;
}
