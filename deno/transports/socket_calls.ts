/**
 * Nonblocking socket calls straight to the C library (Linux, through Deno's FFI), on the file
 * descriptor of a connection Deno opened.
 *
 * Why: every `read` or `write` of a `Deno.Conn` is an async op that completes on a later turn of
 * the event loop, so one message costs tens of µs however small; a `recv` or `send` called
 * synchronously costs about one. So a rank that expects data can poll its sockets the way Open
 * MPI's progress loop does, and hand a large payload to the kernel straight from the caller's
 * buffer (docs/transports/stream.md, "Socket calls").
 * Deno does not expose descriptors, so {@linkcode socketFd} finds one by the connection's ports
 * in /proc. Without FFI permission or on other systems there are no socket calls, and the stream
 * transports (`tcp`, `ws`) use Deno's own reads and writes.
 * @module
 */

/** `recv`'s and `send`'s answer when the socket has nothing to give or no room. */
export const WOULD_BLOCK: number = -1;
/** `poll` events. */
export const POLLIN = 0x1, POLLOUT = 0x4;

/** The calls, bound to the C library. */
export interface SocketCalls {
  /** Bytes read into `into` (> 0), 0 at the end of the stream, or {@linkcode WOULD_BLOCK}. */
  recv(fd: number, into: Uint8Array): number;
  /** Bytes written from `bytes` (> 0), or {@linkcode WOULD_BLOCK}. */
  send(fd: number, bytes: Uint8Array): number;
  /**
   * Waits off the JS thread until one of `fds` is ready for its `events` (pairs of
   * `[fd, events]` in an Int32Array laid out as `struct pollfd`) or `timeoutMs` passes.
   */
  poll(pollfds: Int32Array, timeoutMs: number): Promise<void>;
  /**
   * Blocks the JS thread in `poll` until one of `pollfds` is ready or `timeoutMs` passes: the
   * kernel wakes it the moment data arrives, and its core is free meanwhile.
   */
  pollNow(pollfds: Int32Array, timeoutMs: number): void;
}

const EAGAIN = 11, EINTR = 4;
/** `MSG_DONTWAIT` (the sockets are nonblocking anyway) and `MSG_NOSIGNAL` (no SIGPIPE). */
const RECV_FLAGS = 0x40, SEND_FLAGS = 0x40 | 0x4000;

/** A failed call: its errno, for the connection's error message. */
export class SocketError extends Error {
  readonly errno: number;
  constructor(call: string, errno: number) {
    super(`${call} failed with errno ${errno}${errno === 104 ? " (connection reset)" : ""}`);
    this.errno = errno;
  }
}

let bound: SocketCalls | undefined | null = null;

/**
 * The socket calls for a `size`-rank group, or `undefined` where the stream transports (`tcp`,
 * `ws`) should use Deno's reads and writes: calls not available (see the module docs), or ranks
 * outnumbering cores (a rank that polls holds the core its peer needs; such ranks wait better in
 * Deno's event loop).
 * `DCCL_TCP_FFI=0` turns the calls off, `DCCL_TCP_FFI=1` on whatever the count; `wanted` (when
 * given) decides the same way instead.
 */
export function socketCalls(size: number, wanted?: boolean): SocketCalls | undefined {
  if (wanted === undefined) {
    try {
      const env = Deno.env.get("DCCL_TCP_FFI");
      wanted = env === "1" ? true : env === "0" ? false : undefined;
    } catch { /* no env permission: the default */ }
  }
  if (wanted === false || (wanted !== true && size > navigator.hardwareConcurrency)) {
    return undefined;
  }
  if (bound !== null) return bound;
  bound = undefined;
  if (Deno.build.os !== "linux") return bound;
  for (const need of [{ name: "ffi" }, { name: "read", path: "/proc" }] as const) {
    if (Deno.permissions.querySync(need).state !== "granted") return bound;
  }
  try {
    bound = bind();
  } catch {
    // No such library here: Deno's own reads and writes still work.
  }
  return bound;
}

function bind(): SocketCalls {
  const lib = Deno.dlopen(
    "libc.so.6",
    {
      recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
      send: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
      poll: { parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
      pollNow: { name: "poll", parameters: ["buffer", "u64", "i32"], result: "i32" },
      __errno_location: { parameters: [], result: "pointer" },
    } as const,
  ).symbols;
  // errno is per thread: this is the JS thread's, where recv and send run.
  const errno = new Deno.UnsafePointerView(lib.__errno_location()!);
  /**
   * One `send` (or `recv`): the bytes moved, WOULD_BLOCK, or a thrown SocketError. A failure is
   * confirmed by a second call before it is believed: once (in the full test suite, a peer being
   * killed) errno read back as ENOENT, which recv never sets; a broken socket fails again or
   * reports its end. No closure per call: pumps make these calls in polling loops.
   */
  const checked = (send: boolean, fd: number, bytes: Uint8Array): number => {
    for (let attempt = 0;; attempt++) {
      const r = Number(
        send
          ? lib.send(fd, bytes, BigInt(bytes.byteLength), SEND_FLAGS)
          : lib.recv(fd, bytes, BigInt(bytes.byteLength), RECV_FLAGS),
      );
      if (r >= 0) return r;
      const e = errno.getInt32();
      if (e === EAGAIN || e === EINTR) return WOULD_BLOCK;
      if (attempt > 0) throw new SocketError(send ? "send" : "recv", e);
    }
  };
  return {
    recv: (fd, into) => checked(false, fd, into),
    send: (fd, bytes) => checked(true, fd, bytes),
    poll: async (pollfds, timeoutMs) => {
      await lib.poll(new Uint8Array(pollfds.buffer), BigInt(pollfds.length / 2), timeoutMs);
    },
    pollNow: (pollfds, timeoutMs) =>
      void lib.pollNow(new Uint8Array(pollfds.buffer), BigInt(pollfds.length / 2), timeoutMs),
  };
}

/**
 * The file descriptor of `conn` in this process (Linux): the socket whose inode /proc lists for
 * the connection's local and remote ports. `undefined` if none matches.
 */
export function socketFd(conn: Deno.TcpConn): number | undefined {
  const local = (conn.localAddr as Deno.NetAddr).port;
  const remote = (conn.remoteAddr as Deno.NetAddr).port;
  const inodes = new Set<string>();
  for (const table of ["/proc/self/net/tcp", "/proc/self/net/tcp6"]) {
    let text: string;
    try {
      text = Deno.readTextFileSync(table);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (address: string) => parseInt(address.slice(address.lastIndexOf(":") + 1), 16);
      if (port(f[1]) === local && port(f[2]) === remote) inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of Deno.readDirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = Deno.readLinkSync(`/proc/self/fd/${entry.name}`);
    } catch {
      continue; // closed meanwhile
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && inodes.has(m[1])) return Number(entry.name);
  }
  return undefined;
}
