/**
 * dccl's core, for any web platform: a browser tab's workers and WebGPU device as much as Deno's.
 * Nothing it imports uses a Deno API (`tests/layout_test.ts` keeps it so, and bundles it for
 * browsers). Ranks are workers of the page sharing memory (`shm`) or passing messages
 * (`worker`), or logical ranks on the page's GPU (`gpu`).
 *
 * @example Two workers allreduce in place
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { spawnRanks } from "./core.ts";
 *
 * // examples/allreduce_rank.ts: every rank allreduces rank + 1 and returns the sum
 * const module = new URL("./examples/allreduce_rank.ts", import.meta.url);
 * const sums = await spawnRanks<number>(module, { size: 2, transport: "shm" });
 * assertEquals(sums, [3, 3]); // 1 + 2 on every rank
 * ```
 * @module
 */

export { Communicator } from "./primitives/communicator/communicator.ts";
export type {
  AlgorithmOptions,
  AllgathervOptions,
  AllocOptions,
  AlltoallvOptions,
  GathervOptions,
  ReduceOptions,
  ReduceScattervOptions,
  RootOptions,
  ScattervOptions,
  TagOptions,
} from "./primitives/communicator/communicator.ts";
export type { Counts } from "./primitives/collectives/_counts.ts";
export { CommBuffer, HostBuffer } from "./primitives/memory/comm_buffer.ts";
export type { BufferLike } from "./primitives/memory/comm_buffer.ts";
export { GpuBuffer } from "./primitives/memory/gpu_memory.ts";
export { ManagedBuffer } from "./primitives/memory/managed.ts";
export {
  CommError,
  CommTimeoutError,
  MismatchError,
  PeerFailedError,
  RankFailedError,
} from "./primitives/errors.ts";
export type { RankOutcome } from "./primitives/errors.ts";
export type { Dtype, MemoryKind, ReduceOp } from "./primitives/types.ts";
export { fromBf16, toBf16 } from "./kernels/elements.ts";
export { MAX_TERMS, reproducibleSum } from "./kernels/reproducible.ts";
export type { ReproducibleDtype } from "./kernels/reproducible.ts";
export type { WebTransportName } from "./primitives/registry.ts";
export {
  launchWebGroup as launchGroup,
  spawnWebRanks as spawnRanks,
} from "./primitives/launch/web_group.ts";
export type { WebGroupOptions } from "./primitives/launch/web_group.ts";
export type { GroupOptions, RankGroup } from "./primitives/launch/supervisor.ts";
