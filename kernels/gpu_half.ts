/**
 * What the device's half-precision kernels are made of, for gpu_kernels.ts: the two kernels (word
 * by word at any offset, eight elements at a time on aligned views), how a call is cut between
 * them, the WGSL body each gets, and their pipelines' text and keys.
 * @module
 */

import type { Dtype } from "./elements.ts";
import { fill, type KernelSources, windowWgsl } from "./wgsl.ts";

/** What these helpers read of a binding (gpu_kernels.ts's `Binding`). */
interface HalfBinding {
  view: { dtype: Dtype; byteOffset: number; length: number };
  write: boolean;
}

/**
 * One of the two half kernels: reduce_half.wgsl word by word at any offset (its counts and skips
 * in elements; a window may start half-way into a word), reduce_half_vec4.wgsl eight elements at
 * a time on 16-byte aligned views (its counts and skips in vectors of eight).
 */
export interface HalfKernel {
  source: "half" | "halfVec4";
  /** The WGSL type of its bindings' arrays. */
  element: string;
  /** Elements per unit of its counts and skips. */
  unit: number;
  invocations(elements: number): number;
}

/** The two half kernels. */
export const HALF_KERNELS: Record<"word" | "vec4", HalfKernel> = {
  word: { source: "half", element: "u32", unit: 1, invocations: (n) => Math.ceil(n / 2) + 1 },
  vec4: { source: "halfVec4", element: "vec4<u32>", unit: 8, invocations: (n) => n / 8 },
};

/** A reduction or scale: binding `out`'s view ← `finish` of the `terms` slots combined. */
export interface HalfReduction<B extends HalfBinding = HalfBinding> {
  bindings: B[];
  out: number;
  terms: number[];
  combine?: string;
  finish?: string;
  constants?: Record<string, number>;
}

/** One dispatch's worth of a half kernel: its bindings, functions and BODY. */
export type HalfCall<B extends HalfBinding = HalfBinding> = Omit<HalfReduction<B>, "terms"> & {
  body: string;
};

/**
 * How a reduction is cut between the kernels: eight at a time over the longest multiple of 8
 * when every view starts on a 16-byte boundary, word by word over the rest. Each step of the fold
 * rounds to the half type, as the host reduces rank by rank (docs/dtypes.md).
 */
export function halfParts(
  k: HalfReduction,
): { kernel: HalfKernel; start: number; count: number; body: string }[] {
  const n = k.bindings[k.out].view.length;
  const aligned = k.bindings.every((b) => b.view.byteOffset % 16 === 0);
  const vectors = aligned ? n - (n % 8) : 0;
  const parts = [];
  if (vectors > 0) {
    const words = k.terms.map((j, t) => `    let w${t} = b${j}[k + skip(${j}u)];`);
    const fold = (part: "even" | "odd", into: string) => [
      `    var ${into} = ${part}(w0);`,
      ...k.terms.slice(1).map((_, t) =>
        `    ${into} = rounded(combine(${into}, ${part}(w${t + 1})));`
      ),
    ];
    const body = [...words, ...fold("even", "low"), ...fold("odd", "high")].join("\n");
    parts.push({ kernel: HALF_KERNELS.vec4, start: 0, count: vectors, body });
  }
  if (vectors < n) {
    const load = (j: number) => `widen(b${j}[(i + skip(${j}u)) / 2u], (i + skip(${j}u)) % 2u)`;
    const body = [
      `      var acc = ${load(k.terms[0])};`,
      ...k.terms.slice(1).map((j) => `      acc = rounded(combine(acc, ${load(j)}));`),
      "      let element = narrow(finish(acc));",
    ].join("\n");
    parts.push({ kernel: HALF_KERNELS.word, start: vectors, count: n - vectors, body });
  }
  return parts;
}

/** What tells a half kernel's pipelines apart. */
export function halfPipelineKey(kernel: HalfKernel, shape: string, k: HalfCall): string {
  const access = k.bindings.map((b) => (b.write ? "w" : "r")).join("");
  return `${kernel.source}:${k.bindings[k.out].view.dtype}:${shape}:${access}:${k.finish ?? ""}:${
    JSON.stringify(k.constants)
  }`;
}

/** The WGSL text of `kernel` for the call `k`. */
export function halfSource(sources: KernelSources, kernel: HalfKernel, k: HalfCall): string {
  const dtype = k.bindings[k.out].view.dtype as "f16" | "bf16";
  return fill(sources[kernel.source], {
    WINDOW: windowWgsl(sources, k.bindings.map((b) => b.write), kernel.element),
    CONVERSIONS: sources[dtype],
    ORDER: sources.order,
    COMBINE: k.combine ?? "a",
    FINISH: k.finish ?? "x",
    OUT: String(k.out),
    BODY: k.body,
  });
}
