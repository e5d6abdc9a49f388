/**
 * `compare --same-bits`: that runs made with `--reproducible` gave the same bits. Every cell of
 * such a run was checked, bit for bit, against the reproducible sum of its inputs, which depend
 * only on the primitive, dtype, op, ranks and size; so two runs' cells of the same inputs hold the
 * same bits exactly when both checks passed — whatever the algorithm, transport or memory.
 * @module
 */

import { UsageError } from "../common/flags.ts";

/** A row of a dccl JSON sidecar, as far as the check reads it. */
interface Row {
  primitive: string;
  procs: number;
  bytes: number;
  dtype: string;
  op: string;
  wrong: number;
  inplace_wrong?: number;
}

/** The JSON sidecar of a dccl result file (the file itself, or `x.json` beside `x.csv`). */
function sidecarOf(path: string): string {
  return /\.json$/i.test(path) ? path : path.replace(/\.csv$/i, "") + ".json";
}

/**
 * The cells that two or more of `paths` share, each checked equal; a UsageError naming the file
 * that is not a reproducible dccl run, or the cell whose bits differ.
 */
export function sameBits(paths: string[]): string {
  const cells = new Map<string, string[]>();
  for (const path of paths) {
    const sidecar = sidecarOf(path);
    let json: { metadata?: { reproducible?: boolean }; rows?: Row[] };
    try {
      json = JSON.parse(Deno.readTextFileSync(sidecar));
    } catch (e) {
      throw new UsageError(
        `--same-bits reads dccl's JSON sidecars: ${sidecar} (${(e as Error).name})`,
      );
    }
    if (json.metadata?.reproducible !== true || !Array.isArray(json.rows)) {
      throw new UsageError(
        `--same-bits: ${sidecar} is not a --reproducible run: its bits depend on the algorithm ` +
          "and the transport",
      );
    }
    for (const r of json.rows) {
      const cell = `${r.primitive} ${r.dtype} ${r.op} on ${r.procs} ranks at ${r.bytes} B`;
      if (r.wrong !== 0 || (r.inplace_wrong ?? 0) !== 0) {
        throw new UsageError(
          `--same-bits: ${sidecar}'s ${cell} has wrong elements: its bits differ from the ` +
            "reproducible sum of its inputs",
        );
      }
      cells.set(cell, [...(cells.get(cell) ?? []), sidecar]);
    }
  }
  const shared = [...cells.values()].filter((files) => files.length > 1);
  if (shared.length === 0) {
    throw new UsageError(
      "--same-bits: the runs share no cell (the same primitive, dtype, op, ranks and size)",
    );
  }
  return `same bits: ${shared.length} cells shared by ${paths.length} runs, every result the ` +
    "reproducible sum of the same inputs, bit for bit";
}
