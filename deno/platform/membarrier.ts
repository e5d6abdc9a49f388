/**
 * Asymmetric fences for the `shm` transport's publications, through Deno's FFI.
 *
 * A rank publishes a call's data with a store its peers poll (a slot's sequence number, say).
 * `Atomics.store` is sequentially consistent: on x86 it drains the store buffer, and that waits
 * for the cache lines the data went to, which a peer on another core just read: much of a
 * pipelined 1-float bcast (docs/transports/shm.md, "Publishing"). On x86-64 plain stores
 * already reach other cores in program order (TSO), and V8 keeps typed-array stores in program
 * order, so a plain store publishes as well.
 *
 * The one place that needs more is going to sleep: a rank marks itself asleep and checks once
 * more for the data, while a publisher stores the data and then checks whether to wake it (a
 * store, then a load, on each side). With a plain store the publisher's load may pass its store,
 * and both could miss each other. So the sleeper pays instead: `membarrier`
 * (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`) runs a full fence on every core running a thread of this
 * process, after which every publication made before it is visible to the sleeper's last check.
 * It costs a few µs, and only when a rank goes to sleep (Linux's userspace RCU and folly's
 * asymmetric barriers work the same way).
 *
 * Where any of this is missing (another OS or CPU, no FFI permission, a kernel without the
 * command), {@linkcode heavyFence} is `undefined` and publications stay `Atomics.store`.
 * @module
 */

/** `membarrier`'s system call number on Linux x86-64. */
const SYS_MEMBARRIER = 324;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED = 1 << 4;

let cached: (() => void) | undefined | null = null;

/**
 * A function that makes every store any thread of this process has made visible to the caller
 * (a full fence on every core running one), or `undefined` where plain stores must not publish.
 */
export function heavyFence(): (() => void) | undefined {
  if (cached !== null) return cached;
  cached = undefined;
  if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64") return cached;
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return cached;
  try {
    const lib = Deno.dlopen(
      "libc.so.6",
      {
        syscall: { parameters: ["i64", "i64", "i64"], result: "i64" },
      } as const,
    );
    const membarrier = (cmd: number) =>
      Number(lib.symbols.syscall(BigInt(SYS_MEMBARRIER), BigInt(cmd), 0n));
    // Registration is per process and idempotent; a kernel without the command refuses it.
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) !== 0) return cached;
    cached = () => {
      if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) !== 0) {
        throw new Error("Internal error: membarrier failed after it was registered");
      }
    };
  } catch {
    // No C library here: publications stay atomic.
  }
  return cached;
}
