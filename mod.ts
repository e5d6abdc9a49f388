/**
 * dccl: communication primitives (send/recv, bcast, reduce, allreduce, allgather,
 * reduce-scatter, barrier) for Deno ranks in workers, processes or on one WebGPU device, with a
 * measuring harness.
 *
 * @example Four workers allreduce a shared buffer
 * ```ts ignore
 * // rank_main.ts
 * import type { Communicator } from "./mod.ts";
 * export async function run(comm: Communicator): Promise<number> {
 *   const buf = comm.alloc(1 << 20, { memory: "shared" });
 *   buf.view.fill(comm.rank + 1);
 *   await comm.allreduce(buf, { op: "sum" });
 *   return buf.view[0]; // 1 + 2 + 3 + 4 = 10 on every rank
 * }
 *
 * // main.ts
 * import { spawnRanks } from "./mod.ts";
 * const results = await spawnRanks(new URL("./rank_main.ts", import.meta.url), {
 *   size: 4,
 *   transport: "shm",
 * });
 * console.log(results); // [10, 10, 10, 10]
 * ```
 * @module
 */

export { Communicator } from "./primitives/communicator/communicator.ts";
export type {
  AlgorithmOptions,
  AllocOptions,
  ReduceOptions,
  RootOptions,
  TagOptions,
} from "./primitives/communicator/communicator.ts";
export { CommBuffer, HostBuffer } from "./primitives/memory/comm_buffer.ts";
export { GpuBuffer } from "./primitives/memory/gpu.ts";
export { RankHeap } from "./primitives/memory/heap.ts";
export { GpuKernels } from "./kernels/gpu_kernels.ts";
export type { DeviceView, KernelLimits, KernelSources } from "./kernels/gpu_kernels.ts";
export { GpuDevice, gpuUnavailable } from "./primitives/memory/gpu_device.ts";
export type { GpuDeviceOptions, GpuInfo } from "./primitives/memory/gpu_device.ts";
export { MANAGED_PAGE_BYTES, ManagedBuffer } from "./primitives/memory/managed.ts";
export type { MigrationCount } from "./primitives/memory/managed.ts";
export type { BufferLike } from "./primitives/memory/comm_buffer.ts";
export {
  CommError,
  CommTimeoutError,
  MismatchError,
  PeerFailedError,
  RankFailedError,
} from "./primitives/errors.ts";
export type { RankOutcome } from "./primitives/errors.ts";
export {
  ALGORITHM_NAMES,
  algorithmsFor,
  autoAlgorithm,
  DEVICE_MEMORY,
  PROCESS_TRANSPORTS,
  TRANSPORT_NAMES,
  TRANSPORTS,
} from "./primitives/registry.ts";
export { cheapestAlgorithm, estimateUs } from "./primitives/cost_model.ts";
export type { LinkCosts } from "./primitives/cost_model.ts";
export type {
  Algorithm,
  AlgorithmNeed,
  CollectiveName,
  TransportFacts,
  TransportName,
} from "./primitives/registry.ts";
export type {
  Dtype,
  KernelOp,
  MemoryKind,
  ReduceOp,
  Side,
  TypedArray,
} from "./primitives/types.ts";
export { fromBf16, toBf16 } from "./kernels/elements.ts";
export { launchGroup, spawnRanks } from "./primitives/launch/group.ts";
export type { LaunchOptions } from "./primitives/launch/group.ts";
export type { GroupOptions, RankGroup } from "./primitives/launch/supervisor.ts";
export { joinAsRank0 } from "./primitives/launch/processes.ts";
export type { ProcessesOptions, ProcessRanksOptions } from "./primitives/launch/processes.ts";
export { joinFromEnv, launchFromEnv, rankFromEnv } from "./primitives/launch/env_rank.ts";
export type { EnvGroupOptions, EnvRank, JoinOptions } from "./primitives/launch/env_rank.ts";
