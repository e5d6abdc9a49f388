/**
 * The far end of the loopback limits (loopback.ts), in a worker: it connects to the port it is
 * given and answers, in the same order and counts, each round trip and each stream (with a
 * byte); then it says it is done.
 * @module
 */

import { type SocketCalls, socketCalls, socketFd, WOULD_BLOCK } from "../../deno/mod.ts";

/** How many of each exchange: `[per trial, trials]` (warm-up: one trial's worth more). */
export interface LoopbackPlan {
  tcpTrips: [number, number];
  socketTrips: [number, number];
  streamBytes: number;
  /** `[warm-up, trials]`. */
  streams: [number, number];
  /** Whether the measuring side makes socket calls (else only Deno's reads and writes). */
  socketCalls: boolean;
}

/** Writes all of `bytes` through socket calls, spinning while the kernel has no room. */
export function sendAll(calls: SocketCalls, fd: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length;) {
    const n = calls.send(fd, bytes.subarray(at));
    if (n !== WOULD_BLOCK) at += n;
  }
}

/** Reads all of `into` through socket calls, spinning while nothing has arrived. */
export function recvAll(calls: SocketCalls, fd: number, into: Uint8Array): void {
  for (let at = 0; at < into.length;) {
    const n = calls.recv(fd, into.subarray(at));
    if (n === 0) throw new Error("the loopback connection ended");
    if (n !== WOULD_BLOCK) at += n;
  }
}

/** Reads all of `into` through Deno's reads. */
export async function tcpRead(conn: Deno.Conn, into: Uint8Array): Promise<void> {
  for (let at = 0; at < into.length;) {
    const n = await conn.read(into.subarray(at));
    if (n === null) throw new Error("the loopback connection ended");
    at += n;
  }
}

/** Writes all of `bytes` through Deno's writes. */
export async function tcpWrite(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<{ port: number; plan: LoopbackPlan }>) => void) | null;
  postMessage(done: true): void;
  name?: string;
};

// Only as a worker: loopback.ts imports the helpers above too.
if (typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== "undefined") {
  scope.onmessage = async ({ data: { port, plan } }) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.setNoDelay(true);
    const word = new Uint8Array(4);
    for (let i = 0; i < plan.tcpTrips[0] * (plan.tcpTrips[1] + 1); i++) {
      await tcpRead(conn, word);
      await tcpWrite(conn, word);
    }
    const calls = plan.socketCalls ? socketCalls(1, true) : undefined;
    const fd = calls && socketFd(conn);
    if (calls && fd !== undefined) {
      for (let i = 0; i < plan.socketTrips[0] * (plan.socketTrips[1] + 1); i++) {
        recvAll(calls, fd, word);
        sendAll(calls, fd, word);
      }
      const data = new Uint8Array(plan.streamBytes), ack = new Uint8Array(1);
      for (let i = 0; i < plan.streams[0] + plan.streams[1]; i++) {
        recvAll(calls, fd, data);
        sendAll(calls, fd, ack);
      }
    }
    scope.postMessage(true);
    conn.close();
  };
}
