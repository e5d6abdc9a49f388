/**
 * The scheduler calls a waiting rank makes, through Deno's FFI: handing this thread's core to
 * another runnable thread (`sched_yield`), and asking which CPU this thread runs on
 * (`sched_getcpu`, a vDSO call of a few ns).
 *
 * When ranks outnumber cores, the rank a waiter needs is often runnable but not running. Sleeping
 * on a futex hands the core over too, but the sleeper then pays a wake-up per handoff; yielding
 * keeps the waiter runnable, so the scheduler switches back and forth in a few µs (Open MPI's
 * shared-memory progress loop does the same). Knowing the CPU, a waiter sees when the rank it
 * waits for last ran on its own core, where spinning would only keep that rank from running.
 * Without FFI permission or a known C library there are no calls, and waits sleep instead.
 * @module
 */

import type { SchedulerCalls } from "../../primitives/platform.ts";

/** The C library, its yield call and its current-CPU call on each OS. */
const LIBRARIES: Partial<Record<typeof Deno.build.os, [string, string, string?]>> = {
  linux: ["libc.so.6", "sched_yield", "sched_getcpu"],
  darwin: ["libSystem.B.dylib", "sched_yield"],
  windows: ["kernel32.dll", "SwitchToThread", "GetCurrentProcessorNumber"],
};

let cached: SchedulerCalls | undefined | null = null;

/** This system's scheduler calls, or `undefined` where they cannot be made. */
export function schedulerCalls(): SchedulerCalls | undefined {
  if (cached !== null) return cached;
  cached = undefined;
  const library = LIBRARIES[Deno.build.os];
  if (!library || Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return cached;
  const [path, yieldName, cpuName] = library;
  const call = { parameters: [], result: "i32" } as const;
  try {
    const lib = Deno.dlopen(path, { [yieldName]: call, ...(cpuName ? { [cpuName]: call } : {}) });
    const yieldCall = lib.symbols[yieldName] as () => number;
    const cpuCall = cpuName ? lib.symbols[cpuName] as () => number : () => -1;
    cached = { yieldCore: () => void yieldCall(), currentCpu: cpuCall };
  } catch {
    // No such library here: sleeping still works.
  }
  return cached;
}

/** Bytes of a CPU mask (`cpu_set_t`: 1024 CPUs). */
const MASK_BYTES = 128;

/** Linux's affinity calls on the calling thread (pid 0), or undefined elsewhere. */
function affinityCalls() {
  if (Deno.build.os !== "linux") return undefined;
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return undefined;
  const call = { parameters: ["i32", "usize", "buffer"], result: "i32" } as const;
  try {
    return Deno.dlopen("libc.so.6", { sched_getaffinity: call, sched_setaffinity: call }).symbols;
  } catch {
    return undefined;
  }
}

/** The CPUs this thread may run on, in order; empty where the system does not say. */
export function allowedCpus(): number[] {
  const calls = affinityCalls();
  const mask = new Uint8Array(MASK_BYTES);
  if (!calls || calls.sched_getaffinity(0, BigInt(MASK_BYTES), mask) !== 0) return [];
  const cpus: number[] = [];
  for (let cpu = 0; cpu < MASK_BYTES * 8; cpu++) {
    if (mask[cpu >> 3] & (1 << (cpu & 7))) cpus.push(cpu);
  }
  return cpus;
}

/** Binds the calling thread to `cpu` (threads it starts later inherit that); whether it could. */
export function bindToCpu(cpu: number): boolean {
  const calls = affinityCalls();
  const mask = new Uint8Array(MASK_BYTES);
  mask[cpu >> 3] |= 1 << (cpu & 7);
  bound = calls?.sched_setaffinity(0, BigInt(MASK_BYTES), mask) === 0;
  return bound;
}

/**
 * Lets the calling thread run on any CPU the process may (its main thread's set): a thread a bound
 * rank starts inherits the rank's one CPU. Whether it could.
 */
export function unbindFromRank(): boolean {
  const calls = affinityCalls();
  const mask = new Uint8Array(MASK_BYTES);
  if (!calls || calls.sched_getaffinity(Deno.pid, BigInt(MASK_BYTES), mask) !== 0) return false;
  bound = false;
  return calls.sched_setaffinity(0, BigInt(MASK_BYTES), mask) === 0;
}

/** Whether this thread (a rank's: each worker has its own copy of this module) is bound to a CPU. */
export function boundToCpu(): boolean {
  return bound;
}
let bound = false;

/**
 * Whether this machine has more runnable threads than cores right now (Linux: `procs_running` in
 * /proc/stat, the caller included), so a thread that spins keeps another from running; false
 * where that cannot be read.
 */
export function crowded(): boolean {
  const now = performance.now();
  if (now - crowdedAt < CROWDED_FOR_MS) return crowdedSeen;
  crowdedAt = now;
  try {
    const stat = Deno.readTextFileSync("/proc/stat");
    const at = stat.indexOf("procs_running ");
    crowdedSeen = at >= 0 &&
      parseInt(stat.slice(at + 14, at + 24)) > navigator.hardwareConcurrency;
  } catch {
    crowdedSeen = false;
  }
  return crowdedSeen;
}

/** How long one reading of /proc/stat answers {@linkcode crowded} (a reading costs ~20 µs). */
const CROWDED_FOR_MS = 10;
let crowdedAt = -Infinity, crowdedSeen = false;
