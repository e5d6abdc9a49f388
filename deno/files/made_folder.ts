/**
 * A folder made for a run's outputs, which the run can take back: a run that fails before it
 * writes anything there leaves no empty folder behind (a full disk, a refused resume).
 * @module
 */

import { dirname } from "node:path";

/** A folder made (with the folders above it that were missing), and how to take it back. */
export interface MadeFolder {
  /** Removes the folders this made, deepest first, as long as each is still empty. */
  takeBack(): void;
}

/** Makes `path` and the folders above it that are missing (nothing when it exists already). */
export function makeFolder(path: string): MadeFolder {
  const missing: string[] = [];
  for (let dir = path; !exists(dir); dir = dirname(dir)) {
    missing.push(dir);
    if (dirname(dir) === dir) break;
  }
  Deno.mkdirSync(path, { recursive: true });
  return {
    takeBack() {
      for (const dir of missing) {
        try {
          Deno.removeSync(dir); // refuses a folder that is not empty
        } catch {
          return;
        }
      }
    },
  };
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
