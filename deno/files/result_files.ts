/**
 * Results files on disk for `compare` (bench/compare/results.ts reads any file with a name and a
 * stream of bytes).
 * @module
 */

import { type Point, readResults, type ResultFile } from "../../bench/compare/results.ts";

/** The file at `path`, opened afresh for each stream of it. */
export function resultFile(path: string): ResultFile {
  return { name: path, stream: () => Deno.openSync(path).readable };
}

/** The points of the file at `path` (see `readResults`). */
export function readResultsFile(path: string, defaultProcs?: number): AsyncGenerator<Point> {
  return readResults(resultFile(path), defaultProcs);
}
