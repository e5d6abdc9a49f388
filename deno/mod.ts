/**
 * dccl's Deno-only parts, for programs that go beyond `mod.ts`: the transport table with the
 * processes transports, the process launcher and this process as rank 0 of local processes, the
 * environment of external launchers, and the files the CLI writes and reads. They may change
 * between minor versions.
 *
 * @example Which transports start their ranks as processes
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { TRANSPORT_TABLE } from "./mod.ts";
 *
 * assertEquals(TRANSPORT_TABLE.launching("processes"), ["ws", "tcp"]);
 * ```
 * @module
 */

export {
  PROCESS_TRANSPORTS,
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
} from "./launch/processes.ts";
export { type EnvRank, rankFromEnv } from "./launch/env_rank.ts";
export { RANK_RUNTIME } from "./launch/rank_runtime.ts";
export { SweepWriter } from "./bench/sweep_writer.ts";
export { readResultsFile, resultFile } from "./bench/result_files.ts";
export { TrainReporter, type TrainReportOptions } from "./trainer/train_writer.ts";
export { Checkpointer, type CheckpointMeta, type RankFile } from "./trainer/checkpoint.ts";
export { loadMnistFolder, mnistFolder, packagedMnistDir } from "./trainer/mnist_folder.ts";
