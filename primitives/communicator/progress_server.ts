/**
 * The progress thread's side of a rank (progress_thread.ts): runs each call the rank's thread
 * forwards on the real communicator, with the buffers viewed in the rank's heap, and answers
 * when it ends. Calls are issued in the order they arrive, which is the order the rank made them.
 * @module
 */

import type { Communicator } from "./communicator.ts";
import { recentCalls } from "./communicator.ts";
import { isCollective } from "../collectives/collective_table.ts";
import { errorFromReport, errorReport } from "../errors.ts";
import { heapBuffer } from "../memory/heap.ts";
import {
  isHeapSlice,
  type ProgressJoin,
  type ProgressPort,
  type ProgressReply,
  type ProgressRequest,
  sliceView,
} from "./progress_thread.ts";

/**
 * A progress thread's entry (progress_rank.ts, Deno's progress_worker.ts): once its rank's thread
 * says what to join with, `join` connects the communicator (and names the rank's heap memory it
 * shares), its calls are served, and the rank's thread is told it joined, or why it could not.
 */
export function serveProgressThread<I>(
  join: (init: I) => Promise<{ comm: Communicator; heap: WebAssembly.Memory }>,
): void {
  const scope = self as unknown as {
    onmessage: ((e: MessageEvent<I>) => void) | null;
    postMessage(answer: ProgressJoin): void;
  };
  scope.onmessage = async ({ data }) => {
    scope.onmessage = null;
    let answer: ProgressJoin;
    try {
      const { comm, heap } = await join(data);
      serveProgress(comm, heap, self as unknown as ProgressPort);
      const { rank, size, links, members } = comm;
      answer = { joined: { rank, size, links, members } };
    } catch (e) {
      answer = { failed: errorReport(e) };
    }
    scope.postMessage(answer);
  };
}

/** Serves the rank's calls on `comm`; `heap` is the rank's heap memory, shared with its thread. */
export function serveProgress(
  comm: Communicator,
  heap: WebAssembly.Memory,
  port: ProgressPort,
): void {
  port.onmessage = async ({ data }: MessageEvent<ProgressRequest>) => {
    const reply: ProgressReply = { id: data.id };
    try {
      Object.assign(reply, await answer(comm, heap, data));
    } catch (e) {
      reply.error = errorReport(e);
      reply.calls = recentCalls(comm);
    }
    port.postMessage(reply);
  };
}

/** Runs one request; a failure throws. */
async function answer(
  comm: Communicator,
  heap: WebAssembly.Memory,
  request: ProgressRequest,
): Promise<Omit<ProgressReply, "id">> {
  if (request.method === "close") {
    await comm[Symbol.asyncDispose]();
    return { calls: recentCalls(comm) };
  }
  if (request.method === "abort") {
    await comm.abort(errorFromReport(request.reason));
    return { calls: recentCalls(comm) };
  }
  // Views of the heap as it is now: the rank's thread may have grown it since the last call.
  const memory = heapBuffer(heap);
  const view = (a: unknown) => isHeapSlice(a) ? sliceView(memory, a) : a;
  const args = request.args.map((a) => {
    if (isHeapSlice(a)) return view(a);
    const options = a as { out?: unknown } | undefined;
    return options?.out !== undefined ? { ...options, out: view(options.out) } : a;
  });
  const method = request.method;
  const call = comm[method] as (...a: unknown[]) => Promise<number | void>;
  const value = await call.apply(comm, args);
  return {
    value: typeof value === "number" ? value : undefined,
    algorithm: isCollective(method) ? comm.lastAlgorithm(method) : undefined,
  };
}
