/**
 * Generates the WebAssembly text of the trainer's CPU kernels. One generator, two builds:
 * `relaxed` multiplies and adds with `f32x4.relaxed_madd` (an FMA on x86 with FMA3), `plain` with
 * `f32x4.mul` then `f32x4.add` for engines where relaxed SIMD does not validate.
 *
 * GEMMs run the way BLIS does: both operands are first packed into zero-padded micro-panels
 * (any strides, so transposes cost nothing extra), then a register-blocked micro-kernel computes
 * each MR × NR tile of C with MR·NR/4 f32x4 accumulators, A broadcast one element at a time
 * (`v128.load32_splat`) and B's row of the panel loaded as NR/4 vectors, unrolled four deep in k
 * so that every address is a constant offset from two pointers.
 *
 * Every function reads and writes the imported memory `heap.mem` (the rank's heap) at byte
 * addresses, and `gather_u8` also reads `data.mem` (the data set's images); strides and sizes are
 * in elements.
 *
 * - `pack_a(dst, src, rs, cs, m, k)`: A (m × k, element (i, kk) at `src + 4·(i·rs + kk·cs)`)
 *   into ⌈m/MR⌉ panels of kp × MR floats, kp = k rounded up to 4; padding is zero.
 * - `pack_b(dst, src, rs, cs, k, n)`: B (k × n) into ⌈n/NR⌉ panels of kp × NR floats.
 * - `gemm_packed(ap, bp, c, ldc, m, n, k, bias, flags)`: C (m × n, row-major) = packed A · packed
 *   B, plus the row vector at `bias` (0: none); flags: 1 ReLU on store, 2 accumulate into C.
 * - `relu_mask(d, a, n)`: d[i] = a[i] > 0 ? d[i] : 0 (ReLU's backward).
 * - `colsum(dst, src, rows, cols, flags)`: dst[j] = Σᵢ src[i, j] (a bias gradient); flags: 2
 *   accumulate.
 * - `rounded_products(sums, a, d, inverse, rounders, rows, ni, no)`: the reproducible gradient's
 *   terms, rounded and summed into f64 `sums` (ni × no), two columns at a time.
 * - `gather_u8(dst, src, rows, count, pixels)`: for each of `count` row numbers (u32 at `rows`),
 *   `pixels` bytes of `data.mem` at `src + row·pixels`, as floats divided by 255, to `dst`.
 * - `sgd(p, g, v, n, lr, momentum, scale)`: PyTorch's SGD on a gradient scaled by `scale` (which
 *   turns a sum into a mean): with momentum v = μ·v + s·g, p −= lr·v; without, p −= lr·s·g.
 *
 * `deno task build:wasm` compiles both builds into `mlp_wasm_bytes.generated.ts`.
 * @module
 */

/** The two builds. */
export type MlpBuild = "relaxed" | "plain";

/** Rows of the register tile: one f32x4 of a packed A panel holds a k step's MR values. */
export const MR = 4;
/** Columns of the register tile (two f32x4 vectors). */
export const NR = 8;
const NV = NR / 4;
/** Depth of the k unroll; packed panels are padded to a multiple of it. */
export const KU = 4;

/** `acc + a·b` on f32x4 values, as the build does it. */
function madd(build: MlpBuild, a: string, b: string, acc: string): string {
  return build === "relaxed"
    ? `(f32x4.relaxed_madd ${a} ${b} ${acc})`
    : `(f32x4.add (f32x4.mul ${a} ${b}) ${acc})`;
}

const local = (name: string) => `(local.get $${name})`;
const acc = (r: number, v: number) => `$c${r}_${v}`;
/** `x · 4`: elements to bytes. */
const bytes = (x: string) => `(i32.shl ${x} (i32.const 2))`;

/** i8x16.shuffle lane pattern that picks 32-bit lanes `lanes` from two vectors (0–3 first, 4–7 second). */
function lanes(...picks: number[]): string {
  return picks.flatMap((p) => [0, 1, 2, 3].map((b) => p * 4 + b)).join(" ");
}

/**
 * Packs a matrix into panels of `width` rows (A) or columns (B), each kp × width floats (element
 * (kk, w) at kk·width + w). `outer` counts the panels' axis (m for A, n for B); element (o, kk) of
 * the source lies at `src + 4·(o·os + kk·ks)`. Full panels take a fast path when the source is
 * contiguous along k (4 × 4 transposes) or across the panel (vector copies); edges, other strides
 * and the zero padding go element by element.
 */
function pack(name: string, width: number, params: string, os: string, ks: string, outer: string) {
  const at = (o: string, kk: string) =>
    `(i32.add ${local("src")} ${bytes(`(i32.add (i32.mul ${o} ${os}) (i32.mul ${kk} ${ks}))`)})`;
  const transposes: string[] = [];
  for (let g = 0; g < width / 4; g++) {
    for (let r = 0; r < 4; r++) {
      transposes.push(
        `(local.set $v${r} (v128.load ${
          at(`(i32.add ${local("o")} (i32.const ${g * 4 + r}))`, local("kk"))
        }))`,
      );
    }
    transposes.push(
      `(local.set $t0 (i8x16.shuffle ${lanes(0, 4, 1, 5)} ${local("v0")} ${local("v1")}))`,
      `(local.set $t1 (i8x16.shuffle ${lanes(0, 4, 1, 5)} ${local("v2")} ${local("v3")}))`,
      `(local.set $t2 (i8x16.shuffle ${lanes(2, 6, 3, 7)} ${local("v0")} ${local("v1")}))`,
      `(local.set $t3 (i8x16.shuffle ${lanes(2, 6, 3, 7)} ${local("v2")} ${local("v3")}))`,
    );
    const rows = [["t0", "t1", 0], ["t0", "t1", 2], ["t2", "t3", 0], ["t2", "t3", 2]] as const;
    rows.forEach(([x, y, l], q) =>
      transposes.push(`(v128.store offset=${(q * width + g * 4) * 4} ${local("d")}
            (i8x16.shuffle ${lanes(l, l + 1, l + 4, l + 5)} ${local(x)} ${local(y)}))`)
    );
  }
  const copies = Array.from(
    { length: width / 4 },
    (_, v) =>
      `(v128.store offset=${v * 16} ${local("d")} (v128.load offset=${v * 16} ${
        at(local("o"), local("kk"))
      }))`,
  );
  const full = `(i32.le_u (i32.add ${local("o")} (i32.const ${width})) ${outer})`;
  const next = (kkStep: number) => `
          (local.set $d (i32.add ${local("d")} (i32.const ${kkStep * width * 4})))
          (local.set $kk (i32.add ${local("kk")} (i32.const ${kkStep})))`;
  return `
  (func (export "${name}") ${params}
    (local $o i32) (local $kk i32) (local $kp i32) (local $d i32) (local $w i32)
    (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local.set $kp (i32.and (i32.add ${local("k")} (i32.const ${KU - 1})) (i32.const ${-KU})))
    (local.set $d ${local("dst")})
    (local.set $o (i32.const 0))
    (block $odone (loop $oloop
      (br_if $odone (i32.ge_u ${local("o")} ${outer}))
      (local.set $kk (i32.const 0))
      (if (i32.and ${full} (i32.eq ${ks} (i32.const 1)))
        (then (block $tdone (loop $tloop
          (br_if $tdone (i32.gt_u (i32.add ${local("kk")} (i32.const 4)) ${local("k")}))
          ${transposes.join("\n          ")}
          ${next(4)}
          (br $tloop)))))
      (if (i32.and ${full} (i32.eq ${os} (i32.const 1)))
        (then (block $cdone (loop $cloop
          (br_if $cdone (i32.ge_u ${local("kk")} ${local("k")}))
          ${copies.join("\n          ")}
          ${next(1)}
          (br $cloop)))))
      (block $kdone (loop $kloop
        (br_if $kdone (i32.ge_u ${local("kk")} ${local("kp")}))
        (local.set $w (i32.const 0))
        (block $wdone (loop $wloop
          (br_if $wdone (i32.ge_u ${local("w")} (i32.const ${width})))
          (f32.store (i32.add ${local("d")} ${bytes(local("w"))})
            (if (result f32) (i32.and (i32.lt_u ${local("kk")} ${local("k")})
                                      (i32.lt_u (i32.add ${local("o")} ${local("w")}) ${outer}))
              (then (f32.load ${at(`(i32.add ${local("o")} ${local("w")})`, local("kk"))}))
              (else (f32.const 0))))
          (local.set $w (i32.add ${local("w")} (i32.const 1)))
          (br $wloop)))
        ${next(1)}
        (br $kloop)))
      (local.set $o (i32.add ${local("o")} (i32.const ${width})))
      (br $oloop))))`;
}

/**
 * Stores one element of a tile: bias, accumulate and ReLU in scalar form, for edge tiles that
 * spill through the scratch tile at `$t`.
 */
const SCALAR_STORE = `
            (local.set $x (f32.load (i32.add ${local("t")} ${
  bytes(`(i32.add (i32.mul ${local("r")} (i32.const ${NR})) ${local("w")})`)
})))
            (local.set $p (i32.add ${local("c")} ${
  bytes(
    `(i32.add (i32.mul (i32.add ${local("i")} ${local("r")}) ${local("ldc")}) (i32.add ${
      local("j")
    } ${local("w")}))`,
  )
}))
            (if ${local("bias")} (then (local.set $x (f32.add ${local("x")} (f32.load (i32.add ${
  local("bias")
} ${bytes(`(i32.add ${local("j")} ${local("w")})`)}))))))
            (if (i32.and ${local("flags")} (i32.const 2)) (then (local.set $x (f32.add ${
  local("x")
} (f32.load ${local("p")})))))
            (if (i32.and ${local("flags")} (i32.const 1)) (then (local.set $x (f32.max ${
  local("x")
} (f32.const 0)))))
            (f32.store ${local("p")} ${local("x")})`;

/** The micro-kernel loop over packed panels and the GEMM around it. */
function gemmPacked(build: MlpBuild): string {
  const accLocals = Array.from(
    { length: MR },
    (_, r) => Array.from({ length: NV }, (_, v) => `(local ${acc(r, v)} v128)`).join(" "),
  ).join(" ");
  const step: string[] = [];
  for (let q = 0; q < KU; q++) {
    const row = q === 0 ? local("pb") : local(`pb${q}`);
    for (let v = 0; v < NV; v++) {
      step.push(`(local.set $b${v} (v128.load offset=${v * 16} ${row}))`);
    }
    step.push(`(local.set $av (v128.load offset=${q * MR * 4} ${local("pa")}))`);
    for (let r = 0; r < MR; r++) {
      step.push(
        `(local.set $a (i8x16.shuffle ${lanes(r, r, r, r)} ${local("av")} ${local("av")}))`,
      );
      for (let v = 0; v < NV; v++) {
        step.push(
          `(local.set ${acc(r, v)} ${
            madd(build, local("a"), local(`b${v}`), `(local.get ${acc(r, v)})`)
          })`,
        );
      }
    }
  }
  const zero: string[] = [];
  const stores: string[] = [];
  const full: string[] = [];
  const spill: string[] = [];
  for (let r = 0; r < MR; r++) {
    for (let v = 0; v < NV; v++) {
      zero.push(`(local.set ${acc(r, v)} (v128.const i32x4 0 0 0 0))`);
      const at = `(i32.add ${local("c")} ${
        bytes(
          `(i32.add (i32.mul (i32.add ${local("i")} (i32.const ${r})) ${local("ldc")}) (i32.add ${
            local("j")
          } (i32.const ${v * 4})))`,
        )
      })`;
      const biased = `(if (result v128) ${local("bias")}
            (then (f32x4.add (local.get ${acc(r, v)}) (v128.load (i32.add ${local("bias")} ${
        bytes(`(i32.add ${local("j")} (i32.const ${v * 4}))`)
      }))))
            (else (local.get ${acc(r, v)})))`;
      const summed = `(if (result v128) (i32.and ${local("flags")} (i32.const 2))
            (then (f32x4.add ${biased} (v128.load ${at}))) (else ${biased}))`;
      stores.push(`(v128.store ${at} (local.get ${acc(r, v)}))`);
      full.push(`(v128.store ${at} (if (result v128) (i32.and ${local("flags")} (i32.const 1))
            (then (f32x4.max ${summed} (v128.const f32x4 0 0 0 0))) (else ${summed})))`);
      spill.push(
        `(v128.store offset=${(r * NR + v * 4) * 4} ${local("t")} (local.get ${acc(r, v)}))`,
      );
    }
  }
  return `
  (func (export "gemm_packed") (param $ap i32) (param $bp i32) (param $c i32) (param $ldc i32)
      (param $m i32) (param $n i32) (param $k i32) (param $bias i32) (param $flags i32) (param $t i32)
      (param $bs i32)
    (local $i i32) (local $j i32) (local $kp i32) (local $pa i32) (local $pb i32) (local $end i32)
    ${Array.from({ length: KU - 1 }, (_, q) => `(local $pb${q + 1} i32)`).join(" ")}
    (local $a v128) (local $av v128) ${
    Array.from({ length: NV }, (_, v) => `(local $b${v} v128)`).join(" ")
  }
    ${accLocals}
    (local $r i32) (local $w i32) (local $x f32) (local $p i32) (local $rows i32) (local $cols i32)
    (local.set $kp (i32.and (i32.add ${local("k")} (i32.const ${KU - 1})) (i32.const ${-KU})))
    ;; column panels outside, so that one B panel stays in L1 while A's panels stream past it
    (local.set $j (i32.const 0))
    (block $jdone (loop $jloop
      (br_if $jdone (i32.ge_u ${local("j")} ${local("n")}))
      (local.set $i (i32.const 0))
      (block $idone (loop $iloop
        (br_if $idone (i32.ge_u ${local("i")} ${local("m")}))
        (local.set $pa (i32.add ${local("ap")} (i32.mul ${local("i")} ${bytes(local("kp"))})))
        ;; B's rows of k are $bs bytes apart: NR floats in a packed panel, a row of B itself else
        (local.set $pb (i32.add ${local("bp")} (if (result i32) (i32.eq ${local("bs")} (i32.const ${
    NR * 4
  }))
          (then (i32.mul ${local("j")} ${bytes(local("kp"))})) (else ${bytes(local("j"))}))))
        (local.set $end (i32.add ${local("pb")} (i32.mul ${local("kp")} ${local("bs")})))
        ${zero.join("\n        ")}
        (block $kdone (loop $kloop
          (br_if $kdone (i32.ge_u ${local("pb")} ${local("end")}))
          ${
    Array.from({ length: KU - 1 }, (_, q) =>
      `(local.set $pb${q + 1} (i32.add ${q === 0 ? local("pb") : local(`pb${q}`)} ${local("bs")}))`)
      .join("\n          ")
  }
          ${step.join("\n          ")}
          (local.set $pa (i32.add ${local("pa")} (i32.const ${KU * MR * 4})))
          (local.set $pb (i32.add ${local(`pb${KU - 1}`)} ${local("bs")}))
          (br $kloop)))
        (if (i32.and (i32.le_u (i32.add ${local("i")} (i32.const ${MR})) ${local("m")})
                     (i32.le_u (i32.add ${local("j")} (i32.const ${NR})) ${local("n")}))
          (then
            ;; a full tile: plain stores unless there is a bias, accumulation or ReLU
            (if (i32.or ${local("flags")} ${local("bias")})
              (then ${full.join("\n              ")})
              (else ${stores.join("\n              ")})))
          (else
            ;; an edge tile: through the scratch tile, element by element
            ${spill.join("\n            ")}
            (local.set $rows (i32.sub ${local("m")} ${local("i")}))
            (if (i32.gt_u ${
    local("rows")
  } (i32.const ${MR})) (then (local.set $rows (i32.const ${MR}))))
            (local.set $cols (i32.sub ${local("n")} ${local("j")}))
            (if (i32.gt_u ${
    local("cols")
  } (i32.const ${NR})) (then (local.set $cols (i32.const ${NR}))))
            (local.set $r (i32.const 0))
            (block $rdone (loop $rloop
              (br_if $rdone (i32.ge_u ${local("r")} ${local("rows")}))
              (local.set $w (i32.const 0))
              (block $wdone (loop $wloop
                (br_if $wdone (i32.ge_u ${local("w")} ${local("cols")}))
                ${SCALAR_STORE}
                (local.set $w (i32.add ${local("w")} (i32.const 1)))
                (br $wloop)))
              (local.set $r (i32.add ${local("r")} (i32.const 1)))
              (br $rloop)))))
        (local.set $i (i32.add ${local("i")} (i32.const ${MR})))
        (br $iloop)))
      (local.set $j (i32.add ${local("j")} (i32.const ${NR})))
      (br $jloop))))`;
}

/** `d[i] = a[i] > 0 ? d[i] : 0` over n floats. */
const RELU_MASK = `
  (func (export "relu_mask") (param $d i32) (param $a i32) (param $n i32) (local $end i32)
    (local.set $end (i32.add (local.get $d) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done (loop $loop
      (br_if $done (i32.ge_u (local.get $d) (local.get $end)))
      (v128.store (local.get $d) (v128.and (v128.load (local.get $d))
        (f32x4.gt (v128.load (local.get $a)) (v128.const f32x4 0 0 0 0))))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (local.set $a (i32.add (local.get $a) (i32.const 16)))
      (br $loop)))
    (local.set $end (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 3)) (i32.const 2))))
    (block $done1 (loop $loop1
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      (if (i32.eqz (f32.gt (f32.load (local.get $a)) (f32.const 0))) (then (f32.store (local.get $d) (f32.const 0))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (local.set $a (i32.add (local.get $a) (i32.const 4)))
      (br $loop1))))`;

/** Column sums of a rows × cols matrix into dst (cols), optionally accumulated. */
const COLSUM = `
  (func (export "colsum") (param $dst i32) (param $src i32) (param $rows i32) (param $cols i32) (param $flags i32)
    (local $j i32) (local $r i32) (local $v v128) (local $s f32) (local $p i32)
    (local.set $j (i32.const 0))
    (block $vdone (loop $vloop
      (br_if $vdone (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $cols)))
      (local.set $v (if (result v128) (i32.and (local.get $flags) (i32.const 2))
        (then (v128.load (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2)))))
        (else (v128.const i32x4 0 0 0 0))))
      (local.set $p (i32.add (local.get $src) (i32.shl (local.get $j) (i32.const 2))))
      (local.set $r (i32.const 0))
      (block $rdone (loop $rloop
        (br_if $rdone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $v (f32x4.add (local.get $v) (v128.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $cols) (i32.const 2))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rloop)))
      (v128.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2))) (local.get $v))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br $vloop)))
    (block $sdone (loop $sloop
      (br_if $sdone (i32.ge_u (local.get $j) (local.get $cols)))
      (local.set $s (if (result f32) (i32.and (local.get $flags) (i32.const 2))
        (then (f32.load (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2)))))
        (else (f32.const 0))))
      (local.set $p (i32.add (local.get $src) (i32.shl (local.get $j) (i32.const 2))))
      (local.set $r (i32.const 0))
      (block $rdone1 (loop $rloop1
        (br_if $rdone1 (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $s (f32.add (local.get $s) (f32.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.shl (local.get $cols) (i32.const 2))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rloop1)))
      (f32.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2))) (local.get $s))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $sloop))))`;

/**
 * The reproducible gradient's terms (sync/reproducible.ts), two columns at a time in f64:
 * sums[i·O + o] += Σ_r ((a[r, i]·inverse[i])·d[r, o] + rounders[o]) − rounders[o], rows whose a is
 * zero skipped; every operation exact but the one rounding the adds and subtracts make.
 */
const ROUNDED_PRODUCTS = `
  (func (export "rounded_products") (param $sums i32) (param $a i32) (param $d i32) (param $inv i32) (param $md i32) (param $rows i32) (param $ni i32) (param $no i32)
    (local $r i32) (local $i i32) (local $o i32) (local $x f64) (local $xs v128) (local $w i32)
    (local $drow i32) (local $m v128) (local $t v128) (local $pairs i32)
    (local.set $pairs (i32.and (local.get $no) (i32.const -2)))
    (block $rdone (loop $rloop
      (br_if $rdone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $drow (i32.add (local.get $d) (i32.shl (i32.mul (local.get $r) (local.get $no)) (i32.const 2))))
      (local.set $i (i32.const 0))
      (block $idone (loop $iloop
        (br_if $idone (i32.ge_u (local.get $i) (local.get $ni)))
        (local.set $x (f64.promote_f32 (f32.load (i32.add (local.get $a)
          (i32.shl (i32.add (i32.mul (local.get $r) (local.get $ni)) (local.get $i)) (i32.const 2))))))
        (if (f64.ne (local.get $x) (f64.const 0)) (then
          (local.set $x (f64.mul (local.get $x) (f64.load (i32.add (local.get $inv) (i32.shl (local.get $i) (i32.const 3))))))
          (local.set $xs (f64x2.splat (local.get $x)))
          (local.set $w (i32.add (local.get $sums) (i32.shl (i32.mul (local.get $i) (local.get $no)) (i32.const 3))))
          (local.set $o (i32.const 0))
          (block $odone (loop $oloop
            (br_if $odone (i32.ge_u (local.get $o) (local.get $pairs)))
            (local.set $m (v128.load (i32.add (local.get $md) (i32.shl (local.get $o) (i32.const 3)))))
            (local.set $t (f64x2.sub (f64x2.add (f64x2.mul (local.get $xs)
              (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $drow) (i32.shl (local.get $o) (i32.const 2))))))
              (local.get $m)) (local.get $m)))
            (v128.store (i32.add (local.get $w) (i32.shl (local.get $o) (i32.const 3)))
              (f64x2.add (v128.load (i32.add (local.get $w) (i32.shl (local.get $o) (i32.const 3)))) (local.get $t)))
            (local.set $o (i32.add (local.get $o) (i32.const 2)))
            (br $oloop)))
          (if (i32.lt_u (local.get $o) (local.get $no)) (then
            (f64.store (i32.add (local.get $w) (i32.shl (local.get $o) (i32.const 3)))
              (f64.add (f64.load (i32.add (local.get $w) (i32.shl (local.get $o) (i32.const 3))))
                (f64.sub (f64.add (f64.mul (local.get $x)
                  (f64.promote_f32 (f32.load (i32.add (local.get $drow) (i32.shl (local.get $o) (i32.const 2))))))
                  (f64.load (i32.add (local.get $md) (i32.shl (local.get $o) (i32.const 3)))))
                  (f64.load (i32.add (local.get $md) (i32.shl (local.get $o) (i32.const 3)))))))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $iloop)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rloop))))`;

/** Bytes to floats / 255 (exactly rounded, like the JS reference's table), 16 bytes at a time. */
const GATHER = `
  (func (export "gather_u8") (param $dst i32) (param $src i32) (param $rows i32) (param $count i32) (param $pixels i32)
    (local $s i32) (local $end i32) (local $tail i32) (local $b v128) (local $w v128)
    (local $k v128)
    (local.set $k (f32x4.splat (f32.const 255)))
    (local.set $tail (i32.and (local.get $pixels) (i32.const 15)))
    (block $rdone (loop $rloop
      (br_if $rdone (i32.eqz (local.get $count)))
      (local.set $s (i32.add (local.get $src) (i32.mul (i32.load $heap (local.get $rows)) (local.get $pixels))))
      (local.set $end (i32.add (local.get $s) (i32.sub (local.get $pixels) (local.get $tail))))
      (block $vdone (loop $vloop
        (br_if $vdone (i32.ge_u (local.get $s) (local.get $end)))
        (local.set $b (v128.load $data (local.get $s)))
        (local.set $w (i16x8.extend_low_i8x16_u (local.get $b)))
        (v128.store $heap (local.get $dst) (f32x4.div (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $w))) (local.get $k)))
        (v128.store $heap offset=16 (local.get $dst) (f32x4.div (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $w))) (local.get $k)))
        (local.set $w (i16x8.extend_high_i8x16_u (local.get $b)))
        (v128.store $heap offset=32 (local.get $dst) (f32x4.div (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $w))) (local.get $k)))
        (v128.store $heap offset=48 (local.get $dst) (f32x4.div (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $w))) (local.get $k)))
        (local.set $s (i32.add (local.get $s) (i32.const 16)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 64)))
        (br $vloop)))
      (local.set $end (i32.add (local.get $end) (local.get $tail)))
      (block $sdone (loop $sloop
        (br_if $sdone (i32.ge_u (local.get $s) (local.get $end)))
        (f32.store $heap (local.get $dst) (f32.div (f32.convert_i32_u (i32.load8_u $data (local.get $s))) (f32.const 255)))
        (local.set $s (i32.add (local.get $s) (i32.const 1)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
        (br $sloop)))
      (local.set $rows (i32.add (local.get $rows) (i32.const 4)))
      (local.set $count (i32.sub (local.get $count) (i32.const 1)))
      (br $rloop))))`;

/** SGD with optional momentum over n parameters (see the module docs). */
function sgd(build: MlpBuild): string {
  // One loop per case, so the vector loop carries no branch.
  const loop = (label: string, body: string, scalar: string) => `
    (local.set $end (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $${label}done (loop $${label}loop
      (br_if $${label}done (i32.ge_u (local.get $p) (local.get $end)))
      ${body}
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (local.set $g (i32.add (local.get $g) (i32.const 16)))
      (local.set $v (i32.add (local.get $v) (i32.const 16)))
      (br $${label}loop)))
    (local.set $end (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 3)) (i32.const 2))))
    (block $${label}done1 (loop $${label}loop1
      (br_if $${label}done1 (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $x (f32.mul (f32.load (local.get $g)) (local.get $scale)))
      ${scalar}
      (f32.store (local.get $p) (f32.sub (f32.load (local.get $p)) (f32.mul (local.get $lr) (local.get $x))))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $g (i32.add (local.get $g) (i32.const 4)))
      (local.set $v (i32.add (local.get $v) (i32.const 4)))
      (br $${label}loop1)))`;
  const plain = loop(
    "plain",
    `(v128.store (local.get $p) ${
      madd(build, "(local.get $nls)", "(v128.load (local.get $g))", "(v128.load (local.get $p))")
    })`,
    "",
  );
  const momentum = loop(
    "mom",
    `(local.set $vel ${
      madd(
        build,
        "(local.get $muv)",
        "(v128.load (local.get $v))",
        "(f32x4.mul (v128.load (local.get $g)) (local.get $sv))",
      )
    })
      (v128.store (local.get $v) (local.get $vel))
      (v128.store (local.get $p) ${
      madd(build, "(local.get $nlr)", "(local.get $vel)", "(v128.load (local.get $p))")
    })`,
    `(local.set $x (f32.add (f32.mul (local.get $mu) (f32.load (local.get $v))) (local.get $x)))
      (f32.store (local.get $v) (local.get $x))`,
  );
  return `
  (func (export "sgd") (param $p i32) (param $g i32) (param $v i32) (param $n i32) (param $lr f32) (param $mu f32) (param $scale f32)
    (local $end i32) (local $muv v128) (local $sv v128) (local $nlr v128) (local $nls v128) (local $vel v128) (local $x f32)
    (local.set $nlr (f32x4.splat (f32.neg (local.get $lr))))
    (local.set $nls (f32x4.splat (f32.neg (f32.mul (local.get $lr) (local.get $scale)))))
    (local.set $muv (f32x4.splat (local.get $mu)))
    (local.set $sv (f32x4.splat (local.get $scale)))
    (if (f32.eq (local.get $mu) (f32.const 0))
      (then ${plain})
      (else ${momentum})))`;
}

/** The whole kernel module of a build, as WebAssembly text. */
export function mlpWat(build: MlpBuild): string {
  const strided = (outer: string) =>
    `(param $dst i32) (param $src i32) (param $rs i32) (param $cs i32) ${outer}`;
  return `(module
  (import "heap" "mem" (memory $heap 1 65536 shared))
  (import "data" "mem" (memory $data 1 65536 shared))
${
    pack(
      "pack_a",
      MR,
      strided("(param $m i32) (param $k i32)"),
      local("rs"),
      local("cs"),
      local("m"),
    )
  }
${
    pack(
      "pack_b",
      NR,
      strided("(param $k i32) (param $n i32)"),
      local("cs"),
      local("rs"),
      local("n"),
    )
  }
${gemmPacked(build)}
${RELU_MASK}
${COLSUM}
${ROUNDED_PRODUCTS}
${GATHER}
${sgd(build)}
)\n`;
}
