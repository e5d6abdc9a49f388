/**
 * dccl: communication primitives — send/recv, bcast, reduce, allreduce, allgather,
 * reduce-scatter, alltoall, gather, scatter and barrier — between Deno ranks that are workers
 * (`shm`, `worker`), processes on one host or many (`tcp`, `ws`) or logical ranks on one WebGPU
 * device (`gpu`), on host, shared, device or managed memory, in f32, f64, i32, f16 and bf16.
 *
 * This entry is for Deno; `./web` is the core a browser tab runs, `./bench` the measuring
 * harness, `./trainer` the data-parallel trainer, `./internal` the registry and kernels.
 *
 * @example Four workers allreduce a shared buffer
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { spawnRanks } from "./mod.ts";
 *
 * // examples/allreduce_rank.ts: every rank allreduces rank + 1 and returns the sum
 * const module = new URL("./examples/allreduce_rank.ts", import.meta.url);
 * const results = await spawnRanks<number>(module, { size: 4, transport: "shm" });
 * assertEquals(results, [10, 10, 10, 10]);
 * ```
 * @module
 */

export {
  CommBuffer,
  CommError,
  CommTimeoutError,
  Communicator,
  fromBf16,
  GpuBuffer,
  HostBuffer,
  ManagedBuffer,
  MismatchError,
  PeerFailedError,
  RankFailedError,
  toBf16,
} from "./core.ts";
export type {
  AlgorithmOptions,
  AllocOptions,
  BufferLike,
  Dtype,
  GroupOptions,
  MemoryKind,
  RankGroup,
  RankOutcome,
  ReduceOp,
  ReduceOptions,
  RootOptions,
  TagOptions,
} from "./core.ts";
export type { TransportName } from "./deno/transport_table.ts";
export { launchGroup, spawnRanks } from "./deno/launch/group.ts";
export type { LaunchOptions } from "./deno/launch/group.ts";
export { joinFromEnv, launchFromEnv } from "./deno/launch/env_rank.ts";
export type { EnvGroupOptions, JoinOptions } from "./deno/launch/env_rank.ts";
