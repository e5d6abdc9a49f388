/**
 * Reading a file dccl did not write as a plain file only: opened without blocking (a FIFO in its
 * place answers at once instead of hanging the process) and, where asked, without following a
 * link; judged on the open file (no swap between the check and the read); read whole but never
 * beyond a bound (a link to /dev/zero is refused, not read until memory runs out).
 * @module
 */

import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";

/** A file that is not a plain file to read, or cannot be read: the message is one clause. */
export class PlainFileError extends Error {
  /** Always `PlainFileError`. */
  override name = "PlainFileError";
}

/** Options of {@linkcode readPlainFile}. */
export interface PlainFileOptions {
  /** The most bytes the file may hold. */
  maxBytes: number;
  /** Refuse a link at the path. @default {false} */
  noLinks?: boolean;
  /** Judges the open file; returns why it is refused, if it is. */
  check?(info: Stats): string | undefined;
}

/** `path`'s bytes, or undefined when there is no file; a {@linkcode PlainFileError} otherwise. */
export function readPlainFile(path: string, options: PlainFileOptions): Uint8Array | undefined {
  const flags = constants.O_RDONLY | constants.O_NONBLOCK |
    (options.noLinks ? constants.O_NOFOLLOW : 0);
  let fd: number;
  try {
    fd = openSync(path, flags);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP") throw new PlainFileError(`${path} is a link (a plain file is expected)`);
    throw new PlainFileError(`cannot open ${path}: ${(e as Error).message}`);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new PlainFileError(`${path} is not a regular file`);
    const problem = options.check?.(info);
    if (problem) throw new PlainFileError(problem);
    if (info.size > options.maxBytes) {
      throw new PlainFileError(`${path} holds ${info.size} bytes (at most ${options.maxBytes})`);
    }
    const bytes = new Uint8Array(info.size);
    let got = 0;
    while (got < bytes.length) {
      const n = readSync(fd, bytes, got, bytes.length - got, null);
      if (n === 0) break;
      got += n;
    }
    return bytes.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}
