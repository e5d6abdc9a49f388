/**
 * Waiting for terminated workers that held WebGPU devices to finish tearing them down.
 *
 * Why: on Mesa's GL backend the devices of one process share an EGL display, and a process that
 * exits, or opens a device, while a terminated worker still tears its own down corrupts the heap
 * (docs/design.md, "WebGPU"). Deno says nothing when a terminated worker's thread has ended, so
 * each GPU worker writes its thread's id where its launcher reads it, before it opens a device,
 * and the launcher waits until those threads are gone. Where the runtime cannot name threads (a
 * browser, or no permission to read /proc) it waits a fixed {@linkcode GPU_TEARDOWN_MS}.
 * @module
 */

import { platform } from "../platform.ts";

/** The wait where threads cannot be watched: long enough for an idle device's teardown. */
export const GPU_TEARDOWN_MS = 250;
/** A slot of a worker that cannot say which thread it runs on. */
const UNKNOWN = -1;
/** How often the launcher looks whether the threads have ended. */
const LOOK_MS = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One launcher's GPU workers: the shared slots their thread ids go to, and the wait for them. */
export class GpuThreads {
  /**
   * One slot per worker (0: it has not begun opening a device), handed to each worker; none where
   * the runtime cannot watch threads.
   */
  readonly ids: Int32Array | undefined;

  constructor(workers: number) {
    if (platform.threadEnded) this.ids = new Int32Array(new SharedArrayBuffer(4 * workers));
  }

  /** In the worker, before it opens a device: writes the id of the thread it runs on. */
  static record(ids: Int32Array | undefined, slot: number): void {
    if (ids) Atomics.store(ids, slot, platform.threadId?.() ?? UNKNOWN);
  }

  /**
   * Resolves once every terminated worker's thread has ended (those that never began opening a
   * device hold none), or after `timeoutMs`, the group's deadline, whatever remains.
   */
  async ended(timeoutMs: number): Promise<void> {
    const slots = this.ids, threadEnded = platform.threadEnded;
    const ids = slots ? Array.from(slots, (_, i) => Atomics.load(slots, i)).filter((id) => id) : [];
    if (!slots || !threadEnded || ids.includes(UNKNOWN)) return void await sleep(GPU_TEARDOWN_MS);
    const deadline = performance.now() + timeoutMs;
    while (!ids.every(threadEnded) && performance.now() < deadline) await sleep(LOOK_MS);
  }
}
