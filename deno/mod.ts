/**
 * dccl's Deno-only parts, for programs that go beyond `mod.ts`: the transport table with the
 * processes transports, the process launcher and this process as rank 0 of local processes, the
 * environment of external launchers, and the files the CLI writes and reads. Importing it
 * installs Deno's platform (FFI scheduler calls, fences, timers) for the core. They may change
 * between minor versions.
 *
 * @example Which transports start their ranks as processes, and which one tabs join
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { PROCESS_TRANSPORTS, TAB_TRANSPORT, TRANSPORT_TABLE } from "./mod.ts";
 *
 * assertEquals(TRANSPORT_TABLE.launching("processes"), ["ws", "tcp", "websocket"]);
 * assertEquals([PROCESS_TRANSPORTS, TAB_TRANSPORT], [["ws", "tcp"], "websocket"]);
 * ```
 * @module
 */

import "./platform/install.ts";

export {
  PROCESS_TRANSPORTS,
  TAB_TRANSPORT,
  TRANSPORT_NAMES,
  TRANSPORT_TABLE,
  type TransportName,
  TRANSPORTS,
} from "./transport_table.ts";
export {
  joinAsRank0,
  launchProcesses,
  type ProcessesOptions,
  type ProcessRanksOptions,
  randomToken,
} from "./launch/processes.ts";
export {
  type Hub,
  type HubEvent,
  type HubOptions,
  serveHub,
  type TabEnd,
} from "./transports/websocket_hub.ts";
export { type EnvRank, rankFromEnv } from "./launch/env_rank.ts";
export { RANK_RUNTIME } from "./launch/rank_runtime.ts";
export { SweepWriter } from "./files/sweep_writer.ts";
export { readResultsFile, resultFile } from "./files/result_files.ts";
export { TrainReporter, type TrainReportOptions } from "./files/train_writer.ts";
export { Checkpointer, type CheckpointMeta, type RankFile } from "./files/checkpoint.ts";
export { loadMnistFolder, mnistFolder, packagedMnistDir } from "./files/mnist_folder.ts";

export {
  type AtomicWriteOptions,
  ioReason,
  OutputError,
  writeAtomically,
  writeTogether,
} from "./files/atomic_file.ts";
export {
  type Generation,
  META_FILES,
  readCheckpoint,
  removeCheckpoints,
  removeUncommitted,
} from "./files/checkpoint.ts";
export { stringify } from "./files/csv_stringify.ts";
export { type MadeFolder, makeFolder } from "./files/made_folder.ts";
export { PlainFileError, type PlainFileOptions, readPlainFile } from "./files/plain_file.ts";
export { joinFromEnv, launchFromEnv } from "./launch/env_rank.ts";
export { PROGRESS, type Progress } from "./launch/progress.ts";
export { launchGroup } from "./launch/group.ts";
export type { LaunchOptions } from "./launch/group.ts";
export { rankRuntimeFlags } from "./launch/runtime_flags.ts";
export { socketCalls, socketFd, WOULD_BLOCK } from "./transports/socket_calls.ts";
export type { SocketCalls } from "./transports/socket_calls.ts";
export { closeQuietly, writeAll } from "./transports/stream_link.ts";
