/**
 * Buffer sizes as users write them, on the command line and in the page's form: `2^20`, `1M`
 * (= 2^20), `4K`, `1G` or a plain integer of elements, or bytes with a `B` suffix.
 * @module
 */

import type { Dtype } from "../core.ts";
import { DTYPE_INFO, MAX_BYTES } from "../internal.ts";

const SUFFIX: Record<string, number> = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 };

/** The element count `value` writes for `dtype`, from 1 to 1 GiB of elements; else undefined. */
export function countOf(value: string, dtype: Dtype): number | undefined {
  const width = DTYPE_INFO[dtype].bytes, limit = MAX_BYTES / width;
  const inBytes = value.match(/^(.*?)B$/i);
  const written = inBytes ? inBytes[1] : value;
  const power = written.match(/^(\d+)\^(\d+)$/);
  const suffixed = written.match(/^(\d+)([KMG])$/i);
  const given = power
    ? Number(power[1]) ** Number(power[2])
    : suffixed
    ? Number(suffixed[1]) * SUFFIX[suffixed[2].toUpperCase()]
    : /^\d+$/.test(written)
    ? Number(written)
    : NaN;
  const n = inBytes ? given / width : given;
  return Number.isSafeInteger(n) && n >= 1 && n <= limit ? n : undefined;
}

/** What {@linkcode countOf} accepts for `dtype`, for messages. */
export function countForms(dtype: Dtype): string {
  const width = DTYPE_INFO[dtype].bytes;
  return `a size from 1 to ${MAX_BYTES / width} ${dtype} elements (1 GiB), written like 2^20, ` +
    `1M, 4K or 1048576, or in bytes with a B suffix (${width}B, 4KB, 128MB: whole ${dtype} ` +
    `elements)`;
}

/** Counts from `min` doubling (or `factor`-fold) to `max`, each fitted by `fit`, without repeats. */
export function countsBetween(
  min: number,
  max: number,
  options: { factor?: number; fit?: (count: number) => number } = {},
): number[] {
  const counts: number[] = [];
  for (let c = min; c <= max; c *= options.factor ?? 2) {
    const fitted = options.fit ? options.fit(c) : c;
    if (fitted > 0 && fitted !== counts.at(-1)) counts.push(fitted);
  }
  return counts;
}

/** A size as a footer says it: 512 B, 4 KiB, 16 MiB. */
export function bytesName(bytes: number): string {
  for (const [unit, name] of [[2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"]] as const) {
    if (bytes >= unit) return `${Number((bytes / unit).toPrecision(3))} ${name}`;
  }
  return `${bytes} B`;
}
