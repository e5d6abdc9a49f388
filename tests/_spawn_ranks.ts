// Test helper (gloo's shape): run a rank module on `size` ranks over a transport and return every
// rank's result; the launcher rethrows the first rank error and always tears workers down.
import { assertEquals } from "./_assert.ts";
import { liveWorkers, type SpawnOptions, spawnRanks } from "../mod.ts";

export const RANKS_DIR = new URL("./ranks/", import.meta.url);

export async function runRanks<T>(
  module: string,
  options: SpawnOptions,
): Promise<T[]> {
  try {
    return await spawnRanks<T>(new URL(module, RANKS_DIR), options);
  } finally {
    assertEquals(liveWorkers(), 0, "workers left running");
  }
}
