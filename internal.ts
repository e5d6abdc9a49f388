/**
 * The library's internals for code that builds on it rather than calls it: the benchmark harness
 * and the trainer (`./bench`, `./trainer`), the page, the CLI's tasks, and programs that add an
 * algorithm, a collective or a transport. Each section says what it serves. Unlike `mod.ts` and
 * `./core`, these may change between minor versions: a new algorithm or collective is written
 * against them, and moves with them.
 *
 * It stays a published entry because the published types of `./bench`, `./trainer` and
 * `./deno` name these types (a buffer's `TypedArray`, a run's `LinkCosts`, a harness case's
 * `CollectiveName`), and a user reading them must be able to import what they name; and because
 * the house imports the library only through its entries (tests/layout_test.ts), so what lies
 * behind this one is what the house itself needs of the library, in one documented place
 * (docs/design.md, "Entries").
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

// Vocabulary: element types, ops, memory kinds, what algorithms need.
export type { AlgorithmNeed, KernelOp, LinkCosts, Side, TypedArray } from "./primitives/types.ts";
export {
  DEFAULT_TIMEOUT_MS,
  DEVICE_MEMORY,
  DTYPE_INFO,
  dtypeOf,
  DTYPES,
  MAX_BYTES,
  MEMORY_KINDS,
  REDUCE_OPS,
} from "./primitives/types.ts";

// Collectives: each one's spec and the table of them (a new collective's places).
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
  Layout,
  StagingShape,
  UniformRun,
} from "./primitives/collectives/spec.ts";
export { NO_LAYOUT } from "./primitives/collectives/spec.ts";
/** Displacements of blocks packed in rank order, as the v collectives default them. */
export { packed } from "./primitives/collectives/_counts.ts";
export type { AllgatherRun } from "./primitives/collectives/allgather.ts";
export type { AllreduceRun } from "./primitives/collectives/allreduce.ts";
export type { AlltoallRun } from "./primitives/collectives/alltoall.ts";
export type { BcastRun } from "./primitives/collectives/bcast.ts";
export type { GatherRun } from "./primitives/collectives/gather.ts";
export type { ReduceRun } from "./primitives/collectives/reduce.ts";
export type { ReduceScatterRun } from "./primitives/collectives/reduce_scatter.ts";
export type { ScatterRun } from "./primitives/collectives/scatter.ts";
export type { AlltoallvRun } from "./primitives/collectives/alltoallv.ts";
export type { AllgathervRun } from "./primitives/collectives/allgatherv.ts";
export type { GathervRun } from "./primitives/collectives/gatherv.ts";
export type { ScattervRun } from "./primitives/collectives/scatterv.ts";
export type { ReduceScattervRun } from "./primitives/collectives/reduce_scatterv.ts";

// Algorithms: descriptors, the registry, and how auto picks (a new algorithm's places).
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

// Transports: the contract a transport implements (a new transport's places).
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
  RankKind,
  RestatedBound,
  SharedAccess,
  Simulation,
  ThreadGroupInit,
  ThreadTransport,
  Transport,
  TransportBounds,
  TransportDescriptor,
  TransportFacts,
  WorkersJoin,
  WorkersTransport,
} from "./primitives/transports/transport.ts";
export {
  linkBetween,
  linkCounts,
  type LinkedGroup,
  type LinkKind,
  linkKind,
  WEBSOCKET_FACTS,
} from "./primitives/transports/websocket.ts";
export {
  type Dial,
  type GroupTable,
  type JoinOptions,
  joinWebSocketGroup,
  type Listener,
  type Member,
  type Reservation,
  reserveTabHost,
} from "./primitives/transports/websocket_join.ts";
export type { Supervisor } from "./primitives/launch/supervisor.ts";
export type { RankEnd } from "./primitives/launch/blame.ts";
export type { CallHistory } from "./primitives/launch/mismatch_blame.ts";

// Memory: the rank heap, the device, managed pages.
export { createHeapMemory, HEAP_MAX_BYTES, RankHeap } from "./primitives/memory/heap.ts";
export { RankMemory } from "./primitives/memory/rank_memory.ts";
export type { BufferOwner } from "./primitives/memory/comm_buffer.ts";
export { GpuDevice, gpuUnavailable } from "./primitives/memory/gpu_device.ts";
export type { GpuDeviceOptions, GpuInfo } from "./primitives/memory/gpu_device.ts";
export { MANAGED_PAGE_BYTES } from "./primitives/memory/managed.ts";
export type { MigrationCount } from "./primitives/memory/managed.ts";

// Launchers: ranks as workers or logical ranks, their reports, the platform they run on.
export { launchThread } from "./primitives/launch/thread.ts";
export type { ThreadOptions } from "./primitives/launch/thread.ts";
export { launchWorkers } from "./primitives/launch/workers.ts";
export type { HostPart } from "./primitives/launch/workers.ts";
export { launchWebGroup } from "./primitives/launch/web_group.ts";
export type { HierarchyPlan } from "./primitives/launch/worker_rank.ts";
export type { FailureReport, RankReport } from "./primitives/launch/rank_report.ts";
export type { ErrorReport } from "./primitives/errors.ts";
export { rankFunction, type RankRun, runRank } from "./primitives/launch/rank_report.ts";
export { installPlatform, platform } from "./primitives/platform.ts";
export type { Platform, SchedulerCalls } from "./primitives/platform.ts";
export { SIM } from "./primitives/transports/sim.ts";
export {
  checkModel,
  DEFAULT_MODEL,
  describeFabric,
  describeModel,
  linkCostsOf,
  type SimFabric,
  type SimLink,
  type SimModel,
  type SimPayload,
} from "./primitives/transports/sim_model.ts";
export type { HostArena } from "./primitives/memory/rank_memory.ts";
