// Test helper (gloo's shape): run a rank module on `size` ranks over a transport and return every
// rank's result; the launcher rethrows the first rank error and always tears workers down.
import { assertEquals } from "./_assert.ts";
import { type LaunchOptions, spawnRanks } from "../mod.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";

export const RANKS_DIR = new URL("./ranks/", import.meta.url);

export async function runRanks<T>(
  module: string,
  options: LaunchOptions,
): Promise<T[]> {
  try {
    return await spawnRanks<T>(new URL(module, RANKS_DIR), options);
  } finally {
    assertEquals(liveWorkers(), 0, "workers left running");
  }
}
