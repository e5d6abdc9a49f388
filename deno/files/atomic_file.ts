/**
 * Every file dccl writes is written as atomic replacements are: the bytes go into a new file
 * created exclusively (`O_EXCL`: never through a link planted under its name) with an
 * unpredictable name in the target's folder, and that file is renamed over the target. A reader
 * sees the old file or the new one, never a half-written one; a link at the target's path is
 * replaced, not followed; a failed write leaves nothing behind and says what failed in words.
 * @module
 */

import { basename, dirname } from "node:path";

/** A file could not be written: `cannot write <path>: <why>`. */
export class OutputError extends Error {
  /** Always `OutputError`. */
  override name = "OutputError";
  /** The file that could not be written. */
  readonly path: string;

  /** `path` could not be written, because of `cause` (an I/O error). */
  constructor(path: string, cause: unknown) {
    super(`cannot write ${path}: ${ioReason(cause)}`, { cause });
    this.path = path;
  }
}

/**
 * The system's words for an I/O error, without Deno's `(os error N)`: "no space left on device",
 * "permission denied".
 */
export function ioReason(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const words = message.replace(/\s*\(os error \d+\)/, "").split(":")[0].trim();
  return words.charAt(0).toLowerCase() + words.slice(1);
}

/** Options of {@linkcode writeAtomically}. */
export interface AtomicWriteOptions {
  /**
   * Flush the bytes to the disk before the rename, so a crash of the machine cannot leave the
   * new name with old or missing bytes (checkpoints). @default {false}
   */
  durable?: boolean;
}

/**
 * Writes `data` to `path` atomically (see the module): `path` holds the old bytes or all of the
 * new ones. Throws an {@linkcode OutputError} naming `path`, having removed its temporary file.
 */
export function writeAtomically(
  path: string,
  data: Uint8Array | string,
  options?: AtomicWriteOptions,
): void {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let temp: string | undefined;
  try {
    const created = createExclusive(path);
    temp = created.path;
    try {
      for (let at = 0; at < bytes.byteLength;) at += created.file.writeSync(bytes.subarray(at));
      if (options?.durable) created.file.syncSync();
    } finally {
      created.file.close();
    }
    Deno.renameSync(temp, path);
  } catch (e) {
    if (temp) removeQuietly(temp);
    throw e instanceof OutputError ? e : new OutputError(path, e);
  }
}

/**
 * Writes the files of one run together, each atomically (the paths not given are skipped; their
 * contents are not made): if one cannot be written, all of them are removed, so a run's CSV and
 * its sidecar are both there or neither, and its {@linkcode OutputError} is thrown.
 */
export function writeTogether(files: [path: string | undefined, contents: () => string][]): void {
  try {
    for (const [path, contents] of files) if (path) writeAtomically(path, contents());
  } catch (e) {
    if (!(e instanceof OutputError)) throw e;
    for (const [path] of files) if (path) removeQuietly(path);
    throw e;
  }
}

/** A new file beside `path` with an unpredictable name, created exclusively. */
function createExclusive(path: string): { path: string; file: Deno.FsFile } {
  for (let attempt = 0;; attempt++) {
    const suffix = Array.from(crypto.getRandomValues(new Uint8Array(8)))
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    const temp = `${dirname(path)}/.${basename(path)}.${suffix}.tmp`;
    try {
      return {
        path: temp,
        file: Deno.openSync(temp, { createNew: true, write: true, mode: 0o644 }),
      };
    } catch (e) {
      // Someone else's file under that name (a 2^-64 chance, or a planted one): try another.
      if (!(e instanceof Deno.errors.AlreadyExists) || attempt >= 8) throw new OutputError(path, e);
    }
  }
}

/** Removes `path` if it is there; whatever else goes wrong is not this caller's to report. */
export function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch { /* gone already, or not ours to remove */ }
}
