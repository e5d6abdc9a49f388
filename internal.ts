/**
 * dccl's internals, for programs that build on more than the communicator (the trainer's kernels,
 * tools that read the registry): the algorithm registry and `auto`, transport facts, the rank
 * heap, the WebGPU device and kernels, and element conversions. Runtime-neutral, as core.ts; the
 * Deno-only parts (the transport table with processes, the process launcher) are `./deno`.
 * They may change between minor versions.
 *
 * @example What `auto` picks for an allreduce of 1 MiB on 4 shm ranks
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { autoAlgorithm, WEB_TRANSPORTS } from "./internal.ts";
 *
 * const shm = WEB_TRANSPORTS.byName.shm;
 * assertEquals(autoAlgorithm("allreduce", { transport: shm, bytes: 2 ** 20, size: 4 }), "shm_direct");
 * ```
 * @module
 */

export {
  ALGORITHM_LIST,
  ALGORITHM_NAMES,
  ALGORITHMS,
  AlgorithmTable,
  TransportTable,
  WEB_TRANSPORTS,
} from "./primitives/registry.ts";
export type { Indexed, Launching, WebTransportName } from "./primitives/registry.ts";
export {
  algorithmsFor,
  autoAlgorithm,
  offersOf,
  pickAlgorithm,
  runnableAlgorithms,
} from "./primitives/auto.ts";
export type { AutoQuery, PickQuery } from "./primitives/auto.ts";
export { sideOfNeed } from "./primitives/collectives/algorithm.ts";
export type {
  Algorithm,
  AlgorithmOf,
  DeviceAlgorithm,
  DeviceNeed,
  Facts,
  HostAlgorithm,
  HostNeed,
  PricedCall,
} from "./primitives/collectives/algorithm.ts";
export type {
  CollectiveContext,
  Completion,
  HostAlgorithmPicker,
} from "./primitives/collectives/context.ts";
export {
  COLLECTIVE_LIST,
  COLLECTIVE_NAMES,
  COLLECTIVES,
  isCollective,
  snakeCase,
} from "./primitives/collectives/collective_table.ts";
export type {
  CollectiveName,
  ReducingName,
  Signatures,
  Spec,
} from "./primitives/collectives/collective_table.ts";
export type {
  ArgumentChecks,
  BoundRun,
  CheckedCall,
  CollectiveSpec,
  InPlaceForm,
  Keep,
  StagingShape,
  UniformRun,
} from "./primitives/collectives/spec.ts";
export type { AllgatherRun } from "./primitives/collectives/allgather.ts";
export type { AllreduceRun } from "./primitives/collectives/allreduce.ts";
export type { AlltoallRun } from "./primitives/collectives/alltoall.ts";
export type { BcastRun } from "./primitives/collectives/bcast.ts";
export type { GatherRun } from "./primitives/collectives/gather.ts";
export type { ReduceRun } from "./primitives/collectives/reduce.ts";
export type { ReduceScatterRun } from "./primitives/collectives/reduce_scatter.ts";
export type { ScatterRun } from "./primitives/collectives/scatter.ts";
export { needsDevice, sideOfMemory } from "./primitives/transports/transport.ts";
export type {
  CallCheck,
  CallSummary,
  DeviceAccess,
  DeviceOps,
  HierarchyAccess,
  MeshOptions,
  PreparedGroup,
  ProcessesTransport,
  SharedAccess,
  ThreadTransport,
  Transport,
  TransportBounds,
  TransportDescriptor,
  TransportFacts,
  WorkersJoin,
  WorkersTransport,
} from "./primitives/transports/transport.ts";
export type { AlgorithmNeed, KernelOp, LinkCosts, Side, TypedArray } from "./primitives/types.ts";
export {
  DEVICE_MEMORY,
  DTYPE_INFO,
  dtypeOf,
  DTYPES,
  MAX_BYTES,
  MEMORY_KINDS,
  REDUCE_OPS,
} from "./primitives/types.ts";
export { createHeapMemory, RankHeap } from "./primitives/memory/heap.ts";
export { fromStored, toStored } from "./kernels/elements.ts";
export {
  bestSimdBuild,
  limitsKernels,
  PEAK_FLOPS_PER_ITERATION,
  simdPeakGflops,
} from "./kernels/limits.ts";
export { fromHalf, halfKernels, toHalf } from "./kernels/reduce.ts";
export type { LimitsKernels, SimdBuild } from "./kernels/limits.ts";
export { GpuDevice, gpuUnavailable } from "./primitives/memory/gpu_device.ts";
export type { GpuDeviceOptions, GpuInfo } from "./primitives/memory/gpu_device.ts";
export { MANAGED_PAGE_BYTES } from "./primitives/memory/managed.ts";
export type { MigrationCount } from "./primitives/memory/managed.ts";
export { deviceRefusal, GpuKernels } from "./kernels/gpu_kernels.ts";
export type { DeviceView, KernelLimits, KernelSources } from "./kernels/gpu_kernels.ts";
export { launchThread } from "./primitives/launch/thread.ts";
export type { ThreadOptions } from "./primitives/launch/thread.ts";
export { launchWorkers } from "./primitives/launch/workers.ts";
export type { HostPart } from "./primitives/launch/workers.ts";
export type { HierarchyPlan } from "./primitives/launch/worker_rank.ts";
export type { FailureReport, RankReport } from "./primitives/launch/rank_report.ts";
export { installPlatform, platform } from "./primitives/platform.ts";
export type { Platform, SchedulerCalls } from "./primitives/platform.ts";
