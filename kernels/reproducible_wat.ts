/**
 * Generates the WebAssembly text of the reproducible sums' f32 kernels (kernels/reproducible.ts
 * states the rule; these are its large calls' loops, one term per rank): every function reads and
 * writes the imported shared memory `mem.mem` at byte addresses, `n` elements, and leaves a tail
 * shorter than a vector to its caller.
 *
 * - `f32_codes(codes, src, n)`: each f32's top-cell code as a bf16 word, eight at a time: the
 *   exponent field's cell, or for a subnormal its mantissa's (the exponent of the mantissa
 *   converted to f32 is its leading bit's), 0 for zeros, infinities and NaNs.
 * - `f32_window(acc, src, codes, n)`: acc[i] ← src[i] + M − M (f64), M = 1.5·2^(8c − 137) for the
 *   element's code c (0 when c = 0), two at a time: the term rounded to its window's bottom.
 * - `f32_store(dst, acc, n, divisor)`: dst[i] ← f32 of acc[i] / divisor + 0, four at a time.
 *
 * `deno task build:wasm` compiles it into `reproducible_wasm_bytes.generated.ts`.
 * @module
 */

/** Elements each function's vector loop takes per step. */
export const REPRODUCIBLE_STEPS = { codes: 8, window: 2, store: 4 } as const;

/** The module's text. */
export function reproducibleWat(): string {
  return `(module
  (import "mem" "mem" (memory 1 65536 shared))
  (func $code (param $u v128) (result v128)
    (local $field v128) (local $m v128) (local $sub v128)
    (local.set $field (v128.and (i32x4.shr_u (local.get $u) (i32.const 23)) (i32x4.splat (i32.const 255))))
    (local.set $m (v128.and (local.get $u) (i32x4.splat (i32.const 0x7fffff))))
    ;; A subnormal's leading bit, as the exponent field of its mantissa in f32, less 127.
    (local.set $sub (i32x4.sub
      (i32x4.shr_u (f32x4.convert_i32x4_u (local.get $m)) (i32.const 23)) (i32x4.splat (i32.const 127))))
    (v128.bitselect
      (i32x4.add (i32x4.shr_u (i32x4.add (local.get $field) (i32x4.splat (i32.const 22))) (i32.const 3))
        (i32x4.splat (i32.const 1)))
      (v128.and
        (i32x4.add (i32x4.shr_u (local.get $sub) (i32.const 3)) (i32x4.splat (i32.const 1)))
        (v128.not (i32x4.eq (local.get $m) (i32x4.splat (i32.const 0)))))
      (i32x4.ne (local.get $field) (i32x4.splat (i32.const 0))))
    ;; Infinities and NaNs take no part in the window.
    (v128.andnot (i32x4.eq (local.get $field) (i32x4.splat (i32.const 255)))))
  (func $word (param $c v128) (result v128)
    (i32x4.shr_u (f32x4.convert_i32x4_u (local.get $c)) (i32.const 16)))
  (func (export "f32_codes") (param $codes i32) (param $src i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $src) (i32.shl (i32.and (local.get $n) (i32.const -8)) (i32.const 2))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
      (v128.store (local.get $codes) (i16x8.narrow_i32x4_u
        (call $word (call $code (v128.load (local.get $src))))
        (call $word (call $code (v128.load offset=16 (local.get $src))))))
      (local.set $codes (i32.add (local.get $codes) (i32.const 16)))
      (local.set $src (i32.add (local.get $src) (i32.const 32)))
      (br $next))))
  (func (export "f32_window") (param $acc i32) (param $src i32) (param $codes i32) (param $n i32)
    (local $end i32) (local $c v128) (local $m v128) (local $x v128)
    (local.set $end (i32.add (local.get $src) (i32.shl (i32.and (local.get $n) (i32.const -2)) (i32.const 2))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
      ;; Two codes: bf16 words back to integers, widened to i64 lanes.
      (local.set $c (i64x2.extend_low_i32x4_u (i32x4.trunc_sat_f32x4_u
        (i32x4.shl (i32x4.extend_low_i16x8_u (v128.load32_zero (local.get $codes))) (i32.const 16)))))
      ;; M's bits: exponent field 886 + 8c, the mantissa's top bit (1.5); none for code 0.
      (local.set $m (v128.andnot
        (v128.or
          (i64x2.shl (i64x2.add (i64x2.shl (local.get $c) (i32.const 3)) (i64x2.splat (i64.const 886)))
            (i32.const 52))
          (i64x2.splat (i64.const 0x0008000000000000)))
        (i64x2.eq (local.get $c) (i64x2.splat (i64.const 0)))))
      (local.set $x (f64x2.promote_low_f32x4 (v128.load64_zero (local.get $src))))
      (v128.store (local.get $acc) (f64x2.sub (f64x2.add (local.get $x) (local.get $m)) (local.get $m)))
      (local.set $acc (i32.add (local.get $acc) (i32.const 16)))
      (local.set $src (i32.add (local.get $src) (i32.const 8)))
      (local.set $codes (i32.add (local.get $codes) (i32.const 4)))
      (br $next))))
  (func (export "f32_store") (param $dst i32) (param $acc i32) (param $n i32) (param $divisor f64)
    (local $end i32) (local $d v128) (local $zero v128)
    (local.set $d (f64x2.splat (local.get $divisor)))
    (local.set $zero (f64x2.splat (f64.const 0)))
    (local.set $end (i32.add (local.get $dst) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $dst) (local.get $end)))
      ;; A zero result is +0: adding +0 after the division makes it so.
      (v128.store (local.get $dst) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
        (f32x4.demote_f64x2_zero (f64x2.add (f64x2.div (v128.load (local.get $acc)) (local.get $d)) (local.get $zero)))
        (f32x4.demote_f64x2_zero (f64x2.add (f64x2.div (v128.load offset=16 (local.get $acc)) (local.get $d)) (local.get $zero)))))
      (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
      (local.set $acc (i32.add (local.get $acc) (i32.const 32)))
      (br $next))))
)
`;
}
