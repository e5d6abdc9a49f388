/**
 * Deno's transport table: the web transports and the processes transports, in order (NCCL's
 * `ncclTransports[]`). Tests, `deno bench`, the CLI and the trainer read it; the first transport
 * is the default of the tasks and launchers, the first of each launch kind its kind's default.
 * Adding a transport is its file, a line here and its name in {@linkcode TransportName}.
 * @module
 */

import { TransportTable } from "../primitives/registry.ts";
import { GPU } from "../primitives/transports/gpu.ts";
import { SHM } from "../primitives/transports/shm.ts";
import { SIM } from "../primitives/transports/sim.ts";
import type { TransportFacts } from "../primitives/transports/transport.ts";
import { WORKER } from "../primitives/transports/worker.ts";
import { TCP } from "./transports/tcp.ts";
import { WS } from "./transports/ws.ts";
import { WEBSOCKET } from "./transports/websocket.ts";

/** A transport's name (`--transport`). */
export type TransportName = "shm" | "worker" | "ws" | "tcp" | "websocket" | "gpu" | "sim";

/** Every transport Deno runs, in order. */
export const TRANSPORT_TABLE: TransportTable<TransportName> = new TransportTable({
  shm: SHM,
  worker: WORKER,
  ws: WS,
  tcp: TCP,
  websocket: WEBSOCKET,
  gpu: GPU,
  sim: SIM,
});

/** Every transport's facts, by name. */
export const TRANSPORTS: Readonly<Record<TransportName, TransportFacts>> = TRANSPORT_TABLE.byName;

/** Transport names, in the table's order. */
export const TRANSPORT_NAMES: readonly TransportName[] = TRANSPORT_TABLE.names;

/**
 * Transports whose ranks are processes of a launcher's group (`--launcher env` and `--threads` run
 * over these; the first unless told): not the tab groups' own, whose ranks may be tabs.
 */
export const PROCESS_TRANSPORTS: readonly TransportName[] = TRANSPORT_TABLE.launching("processes")
  .filter((name) => !TRANSPORTS[name].joinsTabs);

/** The transport browser tabs join a group of Deno processes by (`--tabs`). */
export const TAB_TRANSPORT: TransportName = TRANSPORT_NAMES.find((n) => TRANSPORTS[n].joinsTabs)!;
