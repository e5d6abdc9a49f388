/**
 * What the runtime underneath offers beyond the web platform, for the core to use where it
 * exists: scheduler calls and a fence for a waiting `shm` rank, whether the machine's cores are
 * crowded, timers that do not keep the runtime alive, which GPU backend it drives, and the ids of
 * its threads. A web page offers none of these and the core does without them; on Deno,
 * `deno/platform/install.ts` fills them in, in every rank and launcher (a rank's launcher names
 * that module, `GroupOptions.runtime`).
 * @module
 */

/** What a wait can ask of the scheduler. */
export interface SchedulerCalls {
  /** Hands this thread's core to another runnable thread, if there is one. */
  yieldCore(): void;
  /** The CPU this thread runs on now, or -1 where the system does not say. */
  currentCpu(): number;
}

/** The runtime's offers (see the module docs). */
export interface Platform {
  /** Scheduler calls, where the runtime can make them. */
  scheduler?: SchedulerCalls;
  /**
   * A fence that makes every store any thread of this process has made visible to the caller,
   * where plain stores may publish shared-memory data (docs/transports/shm.md, "Publishing").
   */
  heavyFence?: () => void;
  /** Whether this thread is bound to one CPU. */
  boundToCpu(): boolean;
  /** Whether the machine has more runnable threads than cores right now. */
  crowded(): boolean;
  /** Lets `timer` run without keeping the runtime alive. */
  unrefTimer(timer: ReturnType<typeof setTimeout>): void;
  /** Which backend the runtime's WebGPU drives, for run metadata. */
  gpuBackend(): string;
  /** The id of the thread that calls, among its process's, where the runtime can say. */
  threadId?(): number | undefined;
  /** Whether thread `id` of this process has ended (a launcher waits on its workers' threads). */
  threadEnded?(id: number): boolean;
}

/** The platform the core runs on: the web's until a runtime installs its offers. */
export const platform: Platform = {
  boundToCpu: () => false,
  crowded: () => false,
  unrefTimer: () => {},
  gpuBackend: () => "the runtime's own (it does not say)",
};

/** Installs a runtime's offers (before any rank joins a group). */
export function installPlatform(offers: Partial<Platform>): void {
  Object.assign(platform, offers);
}
