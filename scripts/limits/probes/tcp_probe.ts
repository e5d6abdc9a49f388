/**
 * The raw ceilings of the `ws` and `tcp` transports: a plain `Deno.connect` TCP stream on
 * 127.0.0.1 between this process and a worker, at the sizes the closing numbers use, plus a
 * 4-byte ping-pong, first through Deno's reads and writes and then through socket calls on the
 * same connection (how `tcp` and `ws` move bytes where they can); then the same stream through the
 * WebSocket libraries dccl does not use for its data path, for comparison: npm `ws` alone (1 MiB
 * unmasked frames, server to client) and Deno's native WebSocket (`Deno.upgradeWebSocket` and the
 * global `WebSocket`). Neither lets a caller drive the socket itself (see ws_connect.ts).
 *
 *     deno run -A scripts/limits/probes/tcp_probe.ts
 * @module
 */

import { WebSocket, WebSocketServer } from "ws";
import { type SocketCalls, socketCalls, socketFd } from "../../../deno/mod.ts";

const SIZES = [2 ** 16, 2 ** 20, 2 ** 24].map((floats) => floats * 4);
/** Sizes of the WebSocket streams: a 4-byte message (its round trip) first. */
const WS_SIZES = [4, ...SIZES];
const FRAME = 1024 * 1024;
const itersFor = (bytes: number) => Math.max(3, Math.min(2000, Math.floor(2e8 / bytes)));
const gbps = (bytes: number, us: number) => ((bytes * 8) / us / 1e3).toFixed(2);

// The worker runs this same module under a name (import.meta.main is true in workers too).
if ((self as { name?: string }).name !== "tcp-peer") {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const worker = new Worker(import.meta.url, { type: "module", name: "tcp-peer" });
  worker.postMessage(port);
  const conn = await listener.accept();
  conn.setNoDelay(true);
  const one = new Uint8Array(4);
  const t0 = performance.now();
  const pings = 2000;
  for (let i = 0; i < pings; i++) {
    await conn.write(one);
    await readFull(conn, one);
  }
  console.log(
    `ping-pong 4 B: ${(((performance.now() - t0) * 1e3) / pings / 2).toFixed(1)} µs one way`,
  );
  for (const bytes of SIZES) {
    const data = new Uint8Array(bytes);
    const iters = itersFor(bytes);
    const start = performance.now();
    for (let i = 0; i < iters; i++) {
      await writeFull(conn, data);
      await readFull(conn, one);
    }
    const us = ((performance.now() - start) * 1e3) / iters;
    console.log(`stream ${bytes / 4} floats: ${gbps(bytes, us)} Gb/s`);
  }
  // The same connection through socket calls, as `tcp` moves bytes where it can.
  const calls = socketCalls(1), fd = socketFd(conn);
  if (calls && fd !== undefined) {
    const t1 = performance.now();
    for (let i = 0; i < pings; i++) {
      sendAll(calls, fd, one);
      recvAll(calls, fd, one);
    }
    const oneWay = ((performance.now() - t1) * 1e3) / pings / 2;
    console.log(`socket calls ping-pong 4 B: ${oneWay.toFixed(1)} µs one way`);
    for (const bytes of SIZES) {
      const data = new Uint8Array(bytes);
      const iters = itersFor(bytes);
      const start = performance.now();
      for (let i = 0; i < iters; i++) {
        sendAll(calls, fd, data);
        recvAll(calls, fd, one);
      }
      const us = ((performance.now() - start) * 1e3) / iters;
      console.log(`socket calls stream ${bytes / 4} floats: ${gbps(bytes, us)} Gb/s`);
    }
  } else console.log("socket calls: not available here (see socket_calls.ts)");
  conn.close();
  listener.close();

  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
  await new Promise((r) => server.once("listening", r));
  worker.postMessage({ ws: (server.address() as { port: number }).port });
  const [socket] = await new Promise<[WebSocket]>((r) => server.once("connection", (s) => r([s])));
  await wsStreams("npm ws", (data) => socket.send(data, { binary: true }), (ack) => {
    socket.on("message", ack);
  });
  socket.close();
  server.close();

  let accepted: (s: globalThis.WebSocket) => void;
  const native = new Promise<globalThis.WebSocket>((r) => accepted = r);
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onopen = () => accepted(socket);
    return response;
  });
  worker.postMessage({ native: http.addr.port });
  const nativeSocket = await native;
  await wsStreams("native WebSocket", (data) => nativeSocket.send(data), (ack) => {
    nativeSocket.onmessage = ack;
  });
  nativeSocket.close();
  await http.shutdown();
  worker.terminate();
} else {
  globalThis.addEventListener("message", async (event) => {
    const e = event as MessageEvent<number | { ws: number } | { native: number }>;
    if (typeof e.data === "object") {
      return "ws" in e.data ? npmWsClient(e.data.ws) : nativeWsClient(e.data.native);
    }
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: e.data });
    conn.setNoDelay(true);
    const one = new Uint8Array(4);
    for (let i = 0; i < 2000; i++) {
      await readFull(conn, one);
      await conn.write(one);
    }
    for (const bytes of SIZES) {
      const data = new Uint8Array(bytes);
      const iters = itersFor(bytes);
      for (let i = 0; i < iters; i++) {
        await readFull(conn, data);
        await conn.write(one);
      }
    }
    const calls = socketCalls(1), fd = socketFd(conn);
    if (!calls || fd === undefined) return;
    for (let i = 0; i < 2000; i++) {
      recvAll(calls, fd, one);
      sendAll(calls, fd, one);
    }
    for (const bytes of SIZES) {
      const data = new Uint8Array(bytes);
      for (let i = 0; i < itersFor(bytes); i++) {
        recvAll(calls, fd, data);
        sendAll(calls, fd, one);
      }
    }
  });
}

/** Writes all of `data` with socket calls, polling (the probe's two threads have a core each). */
function sendAll(calls: SocketCalls, fd: number, data: Uint8Array): void {
  for (let sent = 0; sent < data.length;) sent += Math.max(0, calls.send(fd, data.subarray(sent)));
}

/** Reads `into.length` bytes with socket calls, polling. */
function recvAll(calls: SocketCalls, fd: number, into: Uint8Array): void {
  for (let got = 0; got < into.length;) {
    const n = calls.recv(fd, into.subarray(got));
    if (n === 0) throw new Error("closed");
    if (n > 0) got += n;
  }
}

async function readFull(conn: Deno.Conn, into: Uint8Array): Promise<void> {
  for (let got = 0; got < into.length;) {
    const n = await conn.read(into.subarray(got));
    if (n === null) throw new Error("closed");
    got += n;
  }
}

async function writeFull(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let sent = 0; sent < data.length;) sent += await conn.write(data.subarray(sent));
}

/**
 * Sends each of {@linkcode WS_SIZES} as a stream of 1 MiB frames through `send`, waits for the
 * peer's acknowledgement (`onAck` registers its handler) of every whole message, and prints the
 * bandwidth (the round trip for 4 bytes).
 */
async function wsStreams(
  name: string,
  send: (data: Uint8Array) => void,
  onAck: (ack: () => void) => void,
): Promise<void> {
  let acked = () => {};
  onAck(() => acked());
  const frame = new Uint8Array(FRAME);
  for (const bytes of WS_SIZES) {
    const iters = itersFor(bytes);
    const start = performance.now();
    for (let i = 0; i < iters; i++) {
      const ack = new Promise<void>((r) => acked = r);
      for (let sent = 0; sent < bytes; sent += FRAME) {
        send(frame.subarray(0, Math.min(FRAME, bytes - sent)));
      }
      await ack;
    }
    const us = ((performance.now() - start) * 1e3) / iters;
    console.log(
      bytes === 4
        ? `${name} 4 B: ${us.toFixed(1)} µs round trip`
        : `${name} stream ${bytes / 4} floats: ${gbps(bytes, us)} Gb/s`,
    );
  }
}

/** Counts the bytes of each size's stream and acknowledges every whole message with `ack`. */
function acknowledger(ack: () => void): (bytes: number) => void {
  let size = 0, got = 0, count = 0;
  return (bytes) => {
    got += bytes;
    if (got < WS_SIZES[size]) return;
    got = 0;
    ack();
    if (++count === itersFor(WS_SIZES[size])) [size, count] = [size + 1, 0];
  };
}

function npmWsClient(port: number): void {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
  const one = new Uint8Array(4);
  const received = acknowledger(() => socket.send(one));
  socket.on("message", (d: Uint8Array) => received(d.byteLength));
}

function nativeWsClient(port: number): void {
  const socket = new globalThis.WebSocket(`ws://127.0.0.1:${port}`);
  socket.binaryType = "arraybuffer";
  const one = new Uint8Array(4);
  const received = acknowledger(() => socket.send(one));
  socket.onmessage = (e: MessageEvent<ArrayBuffer>) => received(e.data.byteLength);
}
