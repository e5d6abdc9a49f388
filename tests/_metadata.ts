// Test helper: the run metadata a sweep run in a test carries (the machine's facts do not matter).
import type { RunMetadata } from "../bench/report_format.ts";

export const TEST_METADATA: RunMetadata = {
  tool: "dccl",
  deno: Deno.version.deno,
  v8: Deno.version.v8,
  os: "test",
  cpu: "test",
  cpus: 1,
  memoryBytes: 0,
  gpuAdapter: null,
  date: new Date().toISOString(),
  command: [],
  options: {},
};
