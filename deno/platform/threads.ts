/**
 * Threads of this process by their ids (Linux, through /proc): the caller's, and whether one has
 * ended. A launcher waits on its GPU workers' threads by them (primitives/launch/gpu_teardown.ts).
 * Elsewhere, or without permission to read /proc, there are no ids and the launcher waits a fixed
 * time instead.
 * @module
 */

/** The id of the calling thread (a sync call runs on the JS thread that makes it). */
export function threadId(): number | undefined {
  try {
    // "/proc/thread-self" links to "<pid>/task/<tid>".
    const id = Number(Deno.readLinkSync("/proc/thread-self").split("/").pop());
    return Number.isInteger(id) && id > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Whether thread `id` of this process has ended. */
export function threadEnded(id: number): boolean {
  try {
    Deno.statSync(`/proc/self/task/${id}`);
    return false;
  } catch {
    // Gone, or not to be looked at (then waiting would never tell).
    return true;
  }
}
