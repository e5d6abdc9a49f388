/**
 * alltoallv's `--matrix FILE.csv` and `--skew zipf:S[:SEED]` read into its traffic: a matrix
 * file is N rows of N counts, elements or bytes with a `B` suffix (nccl-tests#157's form), rank
 * i's row what it sends each rank; a skew is generated (bench/cases/_traffic.ts). Bad input is a
 * one-line UsageError naming the file, row and column.
 * @module
 */

import { parse } from "csv-parse/sync";
import { zipfTraffic } from "../../bench/cases/_traffic.ts";
import type { Traffic } from "../../bench/cases.ts";
import type { Dtype } from "../../core.ts";
import { DTYPE_INFO } from "../../internal.ts";
import { UsageError } from "../common/flags.ts";

/** The traffic `--matrix` or `--skew` give for `procs` ranks of `dtype`; none when neither. */
export function trafficOf(
  flags: { matrix?: string; skew?: string },
  procs: number,
  dtype: Dtype,
): Traffic | undefined {
  if (flags.matrix !== undefined && flags.skew !== undefined) {
    throw new UsageError("--matrix and --skew are not accepted together: give one traffic");
  }
  if (flags.skew !== undefined) return skewOf(flags.skew, procs);
  if (flags.matrix !== undefined) return matrixOf(flags.matrix, procs, dtype);
  return undefined;
}

function skewOf(skew: string, procs: number): Traffic {
  const m = skew.match(/^zipf:(\d+(?:\.\d+)?)(?::(\d+))?$/);
  const s = Number(m?.[1]);
  if (!m || !(s > 0 && s <= 10)) {
    throw new UsageError(
      `--skew ${skew} is not accepted: expected zipf:S or zipf:S:SEED, S from above 0 to 10 ` +
        "(1.2: a mixture-of-experts router's hot experts)",
    );
  }
  return zipfTraffic(procs, s, Number(m[2] ?? 0));
}

function matrixOf(path: string, procs: number, dtype: Dtype): Traffic {
  let text: string;
  try {
    const info = Deno.statSync(path);
    if (!info.isFile) throw new UsageError(`--matrix ${path} is not accepted: not a file`);
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`--matrix ${path} is not accepted: ${(e as Error).name}`);
  }
  let rows: string[][];
  try {
    rows = parse(text, {
      bom: true,
      comment: "#",
      skip_empty_lines: true,
      trim: true,
    }) as string[][];
  } catch (e) {
    throw new UsageError(`--matrix ${path}: not CSV (${(e as Error).message.split("\n")[0]})`);
  }
  if (rows.length !== procs || rows.some((r) => r.length !== procs)) {
    const bad = rows.findIndex((r) => r.length !== procs);
    throw new UsageError(
      `--matrix ${path} is not accepted: ${
        rows.length !== procs
          ? `${rows.length} rows`
          : `row ${bad + 1} has ${rows[bad].length} cells`
      }; the group has ${procs} ranks, so N×N with N = ${procs}`,
    );
  }
  const bytes = DTYPE_INFO[dtype].bytes;
  const weights = rows.map((row, i) =>
    row.map((cell, j) => {
      const m = cell.match(/^(\d+)(B?)$/);
      const n = m ? Number(m[1]) : NaN;
      if (!m || !Number.isSafeInteger(n) || (m[2] && n % bytes !== 0)) {
        throw new UsageError(
          `--matrix ${path}: row ${i + 1}, column ${j + 1} is "${cell}"; expected a count of ` +
            `elements (an integer ≥ 0) or of bytes with a B suffix (whole ${dtype} elements)`,
        );
      }
      return m[2] ? n / bytes : n;
    })
  );
  if (weights.flat().every((w) => w === 0)) {
    throw new UsageError(`--matrix ${path} is not accepted: every count is 0`);
  }
  return { label: `matrix ${path}`, weights };
}
