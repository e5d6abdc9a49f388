/**
 * The loopback floors and ceiling of the process transports (`tcp`, `ws`): the round trip of 4
 * bytes over a TCP connection on 127.0.0.1 through Deno's reads and writes and through the socket
 * calls the stream engine uses (deno/transports/socket_calls.ts), and one connection's stream
 * through those calls. This process and a worker (loopback_peer.ts) are the two ends.
 * @module
 */

import { type Sampled, summarize } from "../../bench/limits/measure.ts";
import { socketCalls, socketFd } from "../../deno/mod.ts";
import { type LoopbackPlan, recvAll, sendAll, tcpRead, tcpWrite } from "./loopback_peer.ts";

/** What the loopback measured. */
export interface LoopbackLimits {
  tcpRoundTripUs: Sampled;
  socketRoundTripUs?: Sampled;
  streamGBs?: Sampled;
}

const PLAN: LoopbackPlan = {
  tcpTrips: [400, 9],
  socketTrips: [4000, 15],
  streamBytes: 16 * 2 ** 20,
  streams: [3, 9],
  socketCalls: false,
};

/** Measures the loopback limits (socket calls where this process may make them). */
export async function loopbackLimits(): Promise<LoopbackLimits> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const calls = socketCalls(1, true);
  const plan = { ...PLAN, socketCalls: calls !== undefined };
  const peer = new Worker(new URL("./loopback_peer.ts", import.meta.url), { type: "module" });
  const peerDone = new Promise<void>((resolve, reject) => {
    peer.onmessage = () => resolve();
    peer.onerror = (e) => {
      e.preventDefault();
      reject(new Error(`the loopback peer failed: ${e.message}`));
    };
  });
  peer.postMessage({ port: (listener.addr as Deno.NetAddr).port, plan });
  const conn = await listener.accept();
  listener.close();
  try {
    conn.setNoDelay(true);
    const word = new Uint8Array(4);
    const tcpRoundTripUs = await roundTrips(plan.tcpTrips, async () => {
      await tcpWrite(conn, word);
      await tcpRead(conn, word);
    });
    const fd = calls && socketFd(conn);
    if (!calls || fd === undefined) return { tcpRoundTripUs };
    const socketRoundTripUs = await roundTrips(plan.socketTrips, () => {
      sendAll(calls, fd, word);
      recvAll(calls, fd, word);
    });
    const data = new Uint8Array(plan.streamBytes), ack = new Uint8Array(1);
    const [warm, trials] = plan.streams;
    const rates: number[] = [];
    for (let i = 0; i < warm + trials; i++) {
      const start = performance.now();
      sendAll(calls, fd, data);
      recvAll(calls, fd, ack);
      if (i >= warm) rates.push(plan.streamBytes / ((performance.now() - start) * 1e6));
    }
    return { tcpRoundTripUs, socketRoundTripUs, streamGBs: summarize(rates) };
  } finally {
    await peerDone.finally(() => {
      conn.close();
      peer.terminate();
    });
  }
}

/** µs per round trip in `trials` trials of `perTrial`, after as many to warm up. */
async function roundTrips(
  [perTrial, trials]: [number, number],
  trip: () => void | Promise<void>,
): Promise<Sampled> {
  for (let i = 0; i < perTrial; i++) await trip();
  const times: number[] = [];
  for (let t = 0; t < trials; t++) {
    const start = performance.now();
    for (let i = 0; i < perTrial; i++) await trip();
    times.push((performance.now() - start) * 1000 / perTrial);
  }
  return summarize(times);
}
