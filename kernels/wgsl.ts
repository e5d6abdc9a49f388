/**
 * The WGSL side of the device kernels: their sources (kernels/*.wgsl, imported as text so that
 * bundles carry them), the WGSL type of each dtype, and the filling in of their `{{…}}` parts.
 * @module
 */

import REDUCE_WGSL from "./reduce.wgsl" with { type: "text" };
import SCALE_WGSL from "./scale.wgsl" with { type: "text" };
import REDUCE_HALF_WGSL from "./reduce_half.wgsl" with { type: "text" };
import REDUCE_HALF_VEC4_WGSL from "./reduce_half_vec4.wgsl" with { type: "text" };
import HALF_F16_WGSL from "./half_f16.wgsl" with { type: "text" };
import HALF_BF16_WGSL from "./half_bf16.wgsl" with { type: "text" };
import FLOAT_ORDER_WGSL from "./float_order.wgsl" with { type: "text" };
import WINDOW_WGSL from "./window.wgsl" with { type: "text" };
import type { Dtype } from "./elements.ts";

/** The WGSL sources, kernels/*.wgsl. */
export interface KernelSources {
  /** `reduce.wgsl`. */
  reduce: string;
  /** `scale.wgsl`. */
  scale: string;
  /** `reduce_half.wgsl`: reduce, scale and copy of 16-bit elements, word by word. */
  half: string;
  /** `reduce_half_vec4.wgsl`: reduce and scale of 16-bit elements eight at a time. */
  halfVec4: string;
  /** `half_f16.wgsl`: f16's conversions, for `half`. */
  f16: string;
  /** `half_bf16.wgsl`: bf16's conversions, for `half`. */
  bf16: string;
  /** `float_order.wgsl`: max and min of floats as the host orders them, for `reduce` and `half`. */
  order: string;
  /** `window.wgsl`: the window and bindings of `reduce` and the half kernels. */
  window: string;
}

/** The WGSL sources beside this module, imported as text (bundles carry them). */
export const KERNEL_SOURCES: KernelSources = {
  reduce: REDUCE_WGSL,
  scale: SCALE_WGSL,
  half: REDUCE_HALF_WGSL,
  halfVec4: REDUCE_HALF_VEC4_WGSL,
  f16: HALF_F16_WGSL,
  bf16: HALF_BF16_WGSL,
  order: FLOAT_ORDER_WGSL,
  window: WINDOW_WGSL,
};

const WGSL_TYPE: Partial<Record<Dtype, string>> = {
  f32: "f32",
  i32: "i32",
  f16: "u32",
  bf16: "u32",
};

/**
 * The WGSL type of a dtype (`u32` words of two 16-bit elements for f16 and bf16). Refused: `f64`
 * (WGSL has no 64-bit floats).
 */
export function wgslType(dtype: Dtype): string {
  const type = WGSL_TYPE[dtype];
  if (!type) {
    const why = deviceRefusal(dtype)!;
    throw new TypeError(why[0].toUpperCase() + why.slice(1));
  }
  return type;
}

/** Why device kernels refuse `dtype` (one line), or undefined when they take it. */
export function deviceRefusal(dtype: Dtype): string | undefined {
  return WHY[dtype] && `device kernels work on f32, i32, f16 and bf16, not ${dtype}: ${WHY[dtype]}`;
}

const WHY: Partial<Record<Dtype, string>> = {
  f64: "WGSL has no 64-bit floats (WebGPU offers no shader-f64)",
};

/**
 * window.wgsl for storage bindings 1… of `element` arrays, read-write where `writes` says: a
 * kernel's `{{WINDOW}}`.
 */
export function windowWgsl(sources: KernelSources, writes: boolean[], element: string): string {
  return fill(sources.window, {
    SKIP_VECTORS: String(Math.ceil(writes.length / 4)),
    BINDINGS: writes.map((write, j) =>
      `@group(0) @binding(${j + 1}) var<storage, ${write ? "read_write" : "read"}> b${j}: ` +
      `array<${element}>;`
    ).join("\n"),
  });
}

/** window.wgsl's uniform: the window's `count` (in the kernel's units) and each binding's skip. */
export function windowParams(windows: { skip: number }[], count: number): Uint32Array {
  const params = new Uint32Array(4 + 4 * Math.ceil(windows.length / 4));
  params[0] = count;
  windows.forEach((w, j) => params[4 + j] = w.skip);
  return params;
}

/** `template` with every `{{NAME}}` replaced. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`Internal error: no value for {{${name}}}`);
    return values[name];
  });
}
