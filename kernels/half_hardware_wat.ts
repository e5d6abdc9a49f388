/**
 * The f16 kernels on the engine's own conversions (WebAssembly's fp16 proposal, in V8 behind
 * `--experimental-wasm-fp16`): `f32x4.promote_low_f16x8` widens four halves to f32 and
 * `f16x8.demote_f32x4_zero` rounds four f32 back to nearest-even, so a vector of eight halves
 * is two promotes, the op in f32 and two demotes — where the software kernels (half_wat.ts)
 * spend a dozen instructions a lane. The same functions and results as those, for f16 only.
 *
 * wabt does not know the two instructions: the text writes `f32x4.abs` and `f32x4.neg` in their
 * places (same stack types, same encoded length), and the build replaces their opcodes
 * ({@linkcode PROMOTE_PLACEHOLDER}, {@linkcode DEMOTE_PLACEHOLDER}) after compiling.
 * @module
 */

import type { KernelOp } from "./elements.ts";
import type { Sharing } from "./reduce_wat.ts";

/** `f32x4.abs` (0xfd 0xe0 0x01) in the text stands for `f32x4.promote_low_f16x8` (0xfd 0xcb 0x02). */
export const PROMOTE_PLACEHOLDER = {
  text: "f32x4.abs",
  from: [0xfd, 0xe0, 0x01],
  to: [0xfd, 0xcb, 0x02],
} as const;
/** `f32x4.neg` (0xfd 0xe1 0x01) stands for `f16x8.demote_f32x4_zero` (0xfd 0xc9 0x02). */
export const DEMOTE_PLACEHOLDER = {
  text: "f32x4.neg",
  from: [0xfd, 0xe1, 0x01],
  to: [0xfd, 0xc9, 0x02],
} as const;

const OPS: Record<KernelOp, string> = {
  sum: "f32x4.add",
  prod: "f32x4.mul",
  max: "f32x4.max",
  min: "f32x4.min",
};

const promote = (v: string) => `(${PROMOTE_PLACEHOLDER.text} ${v})`;
const demote = (v: string) => `(${DEMOTE_PLACEHOLDER.text} ${v})`;
/** The high four halves of `v` moved down, for a promote. */
const high = (v: string) => `(i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 ${v} ${v})`;
/** The low four halves of two demotes, side by side. */
const join = (lo: string, hi: string) =>
  `(i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 ${lo} ${hi})`;

/** Vectors of eight halves per iteration of the main loop. */
const UNROLL = 4;

/**
 * A function looping over `n` halves of pointers `ptrs` (each advancing by its element size per
 * half): `vector(k)` for the k-th eight of {@linkcode UNROLL} × 8 at a time (offsets from the
 * pointers, in bytes per half times 8k), then eight at a time, then `scalar` one by one.
 */
function loops(
  name: string,
  params: string,
  ptrs: [string, number][],
  vector: (k: number) => string,
  scalar: string,
): string {
  const advance = (per: number) =>
    ptrs.map(([p, size]) =>
      `(local.set $${p} (i32.add (local.get $${p}) (i32.const ${size * per})))`
    ).join(" ");
  const loop = (label: string, per: number, body: string) => `
    (block $done${label} (loop $loop${label}
      (br_if $done${label} (i32.gt_s (i32.add (local.get $i) (i32.const ${per})) (local.get $n)))
      ${body}
      ${advance(per)}
      (local.set $i (i32.add (local.get $i) (i32.const ${per})))
      (br $loop${label})))`;
  const unrolled = Array.from({ length: UNROLL }, (_, k) => vector(k)).join("\n      ");
  return `
  (func (export "${name}") ${params}
    (local $i i32) (local $va v128) (local $vb v128) (local $x v128) (local $y v128)
    ${loop("8x", 8 * UNROLL, unrolled)}
    ${loop("8", 8, vector(0))}
    (block $done1 (loop $loop1
      (br_if $done1 (i32.ge_s (local.get $i) (local.get $n)))
      ${scalar}
      ${advance(1)}
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $loop1))))`;
}

/** One half at `$p` of `memory`, splatted (for a promote of its lane 0). */
const oneHalf = (memory: string, p: string) =>
  `(v128.load16_splat $${memory}_mem (local.get $${p}))`;
/** Stores lane 0 of halves `v` at `$d`. */
const storeHalf = (v: string) =>
  `(i32.store16 $dst_mem (local.get $d) (i16x8.extract_lane_u 0 ${v}))`;
/** A v128 of `memory` at `$p` plus `offset` bytes. */
const load = (memory: string, p: string, offset: number) =>
  `(v128.load $${memory}_mem offset=${offset} (local.get $${p}))`;
const store = (offset: number, value: string) =>
  `(v128.store $dst_mem offset=${offset} (local.get $d) ${value})`;

function reduceFunc(op: KernelOp): string {
  const f = OPS[op];
  return loops(
    `${op}_f16`,
    "(param $d i32) (param $a i32) (param $b i32) (param $n i32)",
    [["d", 2], ["a", 2], ["b", 2]],
    (k) =>
      `(local.set $va ${load("a", "a", 16 * k)})
      (local.set $vb ${load("b", "b", 16 * k)})
      (local.set $x (${f} ${promote("(local.get $va)")} ${promote("(local.get $vb)")}))
      (local.set $y (${f} ${promote(high("(local.get $va)"))} ${promote(high("(local.get $vb)"))}))
      ${store(16 * k, join(demote("(local.get $x)"), demote("(local.get $y)")))}`,
    storeHalf(demote(`(${f} ${promote(oneHalf("a", "a"))} ${promote(oneHalf("b", "b"))})`)),
  );
}

function divFunc(): string {
  return loops(
    "div_f16",
    "(param $d i32) (param $n i32) (param $k f32) (local $kv v128)",
    [["d", 2]],
    (k) =>
      `(local.set $kv (f32x4.splat (local.get $k)))
      (local.set $va ${load("dst", "d", 16 * k)})
      (local.set $x (f32x4.div ${promote("(local.get $va)")} (local.get $kv)))
      (local.set $y (f32x4.div ${promote(high("(local.get $va)"))} (local.get $kv)))
      ${store(16 * k, join(demote("(local.get $x)"), demote("(local.get $y)")))}`,
    storeHalf(demote(`(f32x4.div ${promote(oneHalf("dst", "d"))} (f32x4.splat (local.get $k)))`)),
  );
}

/** `to_f16(dst, a, n)`, and with feedback `to_f16_feedback(dst, a, b, n)` (`b`: the residual). */
function narrowFunc(feedback: boolean): string {
  const sum = (offset: number) =>
    feedback
      ? `(f32x4.add ${load("a", "a", offset)} ${load("b", "b", offset)})`
      : load("a", "a", offset);
  const residual = (offset: number, exact: string, rounded: string) =>
    feedback
      ? `(v128.store $b_mem offset=${offset} (local.get $b) (f32x4.sub ${exact} ${
        promote(rounded)
      }))`
      : "";
  const scalar = (memory: string) => `(f32.load $${memory}_mem (local.get $${memory}))`;
  const one = `(f32x4.splat ${feedback ? `(f32.add ${scalar("a")} ${scalar("b")})` : scalar("a")})`;
  return loops(
    feedback ? "to_f16_feedback" : "to_f16",
    `(param $d i32) (param $a i32)${feedback ? " (param $b i32)" : ""} (param $n i32)`,
    [["d", 2], ["a", 4], ...(feedback ? [["b", 4] as [string, number]] : [])],
    (k) =>
      `(local.set $x ${sum(32 * k)})
      (local.set $y ${sum(32 * k + 16)})
      (local.set $va ${demote("(local.get $x)")})
      (local.set $vb ${demote("(local.get $y)")})
      ${residual(32 * k, "(local.get $x)", "(local.get $va)")}
      ${residual(32 * k + 16, "(local.get $y)", "(local.get $vb)")}
      ${store(16 * k, join("(local.get $va)", "(local.get $vb)"))}`,
    `(local.set $x ${one})
      (local.set $va ${demote("(local.get $x)")})
      ${
      feedback
        ? `(f32.store $b_mem (local.get $b) (f32x4.extract_lane 0 (f32x4.sub (local.get $x) ${
          promote("(local.get $va)")
        })))`
        : ""
    }
      ${storeHalf("(local.get $va)")}`,
  );
}

/** `from_f16(dst, a, n)`: the f32 values of the halves at `a`. */
function widenFunc(): string {
  return loops(
    "from_f16",
    "(param $d i32) (param $a i32) (param $n i32)",
    [["d", 4], ["a", 2]],
    (k) =>
      `(local.set $va ${load("a", "a", 16 * k)})
      ${store(32 * k, promote("(local.get $va)"))}
      ${store(32 * k + 16, promote(high("(local.get $va)")))}`,
    `(f32.store $dst_mem (local.get $d) (f32x4.extract_lane 0 ${promote(oneHalf("a", "a"))}))`,
  );
}

/** The module of the hardware f16 kernels for `dst`, `a` and `b` memories of this sharing. */
export function halfHardwareWat(dst: Sharing, a: Sharing, b: Sharing): string {
  const memory = (name: string, sharing: Sharing) =>
    `(import "mem" "${name}" (memory $${name}_mem 1 65536${
      sharing === "shared" ? " shared" : ""
    }))`;
  const funcs = [
    ...(["sum", "prod", "max", "min"] as const).map(reduceFunc),
    divFunc(),
    narrowFunc(false),
    narrowFunc(true),
    widenFunc(),
  ];
  return `(module\n  ${memory("dst", dst)}\n  ${memory("a", a)}\n  ${memory("b", b)}${
    funcs.join("\n")
  }\n)\n`;
}

/**
 * `bytes` (a module compiled from {@linkcode halfHardwareWat}'s text) with the placeholders'
 * opcodes replaced by the conversions'; throws unless exactly `expected` were found.
 */
export function withConversions(bytes: Uint8Array, expected: number): Uint8Array<ArrayBuffer> {
  const out = Uint8Array.from(bytes);
  let found = 0;
  for (let i = 0; i + 2 < out.length; i++) {
    for (const p of [PROMOTE_PLACEHOLDER, DEMOTE_PLACEHOLDER]) {
      if (out[i] === p.from[0] && out[i + 1] === p.from[1] && out[i + 2] === p.from[2]) {
        out.set(p.to, i);
        found++;
        i += 2;
      }
    }
  }
  if (found !== expected) {
    throw new Error(`expected ${expected} placeholders in the f16 kernels, found ${found}`);
  }
  return out;
}

/** How many placeholders `text` holds (the count {@linkcode withConversions} expects). */
export function placeholdersIn(text: string): number {
  return text.split(PROMOTE_PLACEHOLDER.text).length - 1 +
    text.split(DEMOTE_PLACEHOLDER.text).length - 1;
}
