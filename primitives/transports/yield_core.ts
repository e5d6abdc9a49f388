/**
 * Handing this thread's core to another runnable thread (`sched_yield`), through Deno's FFI.
 *
 * When ranks outnumber cores, the rank a waiter needs is often runnable but not running. Sleeping
 * on a futex hands the core over too, but the sleeper then pays a wake-up (30–50 µs on a VM) per
 * handoff; yielding keeps the waiter runnable, so the scheduler switches back and forth in a few
 * µs (Open MPI's shared-memory progress loop does the same). Without FFI permission or a known C
 * library this returns `undefined` and waits fall back to sleeping.
 * @module
 */

/** The C library and the name of its yield call on each OS. */
const LIBRARIES: Partial<Record<typeof Deno.build.os, [string, string]>> = {
  linux: ["libc.so.6", "sched_yield"],
  darwin: ["libSystem.B.dylib", "sched_yield"],
  windows: ["kernel32.dll", "SwitchToThread"],
};

let cached: (() => void) | undefined | null = null;

/** A function that yields this thread's core, or `undefined` where that is not possible. */
export function coreYielder(): (() => void) | undefined {
  if (cached !== null) return cached;
  cached = undefined;
  const library = LIBRARIES[Deno.build.os];
  if (!library || Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return cached;
  const [path, name] = library;
  try {
    const lib = Deno.dlopen(path, { [name]: { parameters: [], result: "i32" } } as const);
    const call = lib.symbols[name] as () => number;
    cached = () => void call();
  } catch {
    // No such library here: sleeping still works.
  }
  return cached;
}
