/**
 * The raw ceiling of the `ws` transport: a plain `Deno.connect` TCP stream on 127.0.0.1 between
 * this process and a worker, at the sizes the ws closing numbers use, plus a 4-byte ping-pong.
 *
 *     deno run -A bench/tcp_probe.ts
 * @module
 */

const SIZES = [2 ** 16, 2 ** 20, 2 ** 24].map((floats) => floats * 4);

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
    const iters = Math.max(3, Math.floor(2e8 / bytes));
    const start = performance.now();
    for (let i = 0; i < iters; i++) {
      await writeFull(conn, data);
      await readFull(conn, one);
    }
    const us = ((performance.now() - start) * 1e3) / iters;
    console.log(`stream ${bytes / 4} floats: ${((bytes * 8) / us / 1e3).toFixed(2)} Gb/s`);
  }
  conn.close();
  listener.close();
  worker.terminate();
} else {
  globalThis.addEventListener("message", async (event) => {
    const e = event as MessageEvent<number>;
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: e.data });
    conn.setNoDelay(true);
    const one = new Uint8Array(4);
    for (let i = 0; i < 2000; i++) {
      await readFull(conn, one);
      await conn.write(one);
    }
    for (const bytes of SIZES) {
      const data = new Uint8Array(bytes);
      const iters = Math.max(3, Math.floor(2e8 / bytes));
      for (let i = 0; i < iters; i++) {
        await readFull(conn, data);
        await conn.write(one);
      }
    }
  });
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
