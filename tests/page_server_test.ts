// The page server (docs/security.md): it answers GET and HEAD only, only to the names of its own
// address (a page of another site that rebinds its name to 127.0.0.1 is refused), and streams its
// files, so twenty clients downloading MNIST at once leave its memory flat.
import { assert_, assertEquals } from "./_assert.ts";
import { MNIST_FILES } from "../trainer/mnist.ts";

/** Starts `deno task serve --port 0` in a process of its own; resolves with its address. */
async function startServer() {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../scripts/serve.ts", import.meta.url).pathname, "--port", "0"],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Its log; its one line when stopped, "interrupted by SIGTERM", is expected here.
  let log = "";
  const logged = (async () => {
    for await (const text of child.stderr.pipeThrough(new TextDecoderStream())) log += text;
  })();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await lines.read();
  const address = value?.match(/http:\S+/)?.[0];
  if (!address) throw new Error(`deno task serve printed no address: ${value}`);
  const url = new URL(address);
  lines.releaseLock();
  return {
    url,
    pid: child.pid,
    log: () => log,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await logged;
    },
  };
}

/** One raw HTTP/1.1 request (any Host, any method); resolves with the status line's code. */
async function rawStatus(url: URL, method: string, host: string, path = "/"): Promise<number> {
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    const request = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n` +
      `Content-Length: 0\r\n\r\n`;
    await conn.write(new TextEncoder().encode(request));
    const buf = new Uint8Array(256);
    const n = await conn.read(buf);
    return Number(new TextDecoder().decode(buf.subarray(0, n ?? 0)).split(" ")[1]);
  } finally {
    conn.close();
  }
}

/** A process's peak resident memory in MB (VmHWM). */
function peakMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(status.match(/VmHWM:\s+(\d+) kB/)![1]) / 1024;
}

Deno.test("page server: only its own Host names are answered (no DNS rebinding)", async () => {
  const server = await startServer();
  try {
    const own = `127.0.0.1:${server.url.port}`;
    assertEquals(await rawStatus(server.url, "GET", own), 200);
    assertEquals(await rawStatus(server.url, "GET", `localhost:${server.url.port}`), 200);
    // Host names are case-insensitive.
    assertEquals(await rawStatus(server.url, "GET", `LOCALHOST:${server.url.port}`), 200);
    for (const host of ["evil.example", `evil.example:${server.url.port}`, "127.0.0.1:1", ""]) {
      assertEquals(await rawStatus(server.url, "GET", host), 403, `Host: ${host}`);
    }
  } finally {
    await server.stop();
  }
});

Deno.test("page server: GET and HEAD are answered, every other method gets 405", async () => {
  const server = await startServer();
  try {
    const own = `127.0.0.1:${server.url.port}`;
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      assertEquals(await rawStatus(server.url, method, own), 405, method);
    }
    const mnist = new URL(`/mnist/${MNIST_FILES.trainImages}`, server.url);
    const head = await fetch(mnist, { method: "HEAD" });
    assertEquals(head.status, 200);
    assertEquals(head.headers.get("content-length"), "47040016");
    assertEquals(head.headers.get("allow"), null);
    assertEquals(await fetch(new URL("/nothing", server.url)).then((r) => r.text()), "not found\n");
    // What it cannot serve, it says in its log.
    const missing = await fetch(new URL("/bundle/web/page/gone.js", server.url));
    assertEquals(missing.status, 404);
    await missing.body?.cancel();
    const line = "dccl page server: 404 /bundle/web/page/gone.js: no such file";
    for (let i = 0; i < 100 && !server.log().includes(line); i++) {
      await new Promise((r) => setTimeout(r, 50)); // the log line crosses a pipe
    }
    assert_(server.log().includes(line), server.log());
  } finally {
    await server.stop();
  }
});

Deno.test("page server: twenty parallel downloads of MNIST leave its memory flat", async () => {
  const server = await startServer();
  try {
    const mnist = new URL(`/mnist/${MNIST_FILES.trainImages}`, server.url);
    await (await fetch(mnist)).arrayBuffer(); // a first download, before the baseline
    const before = peakMb(server.pid);
    const sizes = await Promise.all(Array.from({ length: 20 }, async () => {
      let bytes = 0;
      for await (const chunk of (await fetch(mnist)).body!) bytes += chunk.length;
      return bytes;
    }));
    assertEquals(sizes, Array(20).fill(47040016));
    const grew = peakMb(server.pid) - before;
    // Reading each file whole would take 20 × 45 MB; streamed, a few socket buffers.
    assert_(grew < 150, `the server's peak memory grew ${grew.toFixed(0)} MB`);
  } finally {
    await server.stop();
  }
});

Deno.test("page server: a request head that never ends is closed at its deadline, and connections are capped", async () => {
  const server = await startServer();
  const stalled: Deno.Conn[] = [];
  try {
    // 200 connections that send a request line and never finish their headers.
    for (let i = 0; i < 200; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(server.url.port) });
      await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
      stalled.push(conn);
    }
    const fds = () => [...Deno.readDirSync(`/proc/${server.pid}/fd`)].length;
    assert_(fds() < 128 + 64, `the server holds ${fds()} descriptors`);
    // Every one is closed by the server within its 10 s deadline (or refused at the cap).
    const closed = await Promise.all(stalled.map(async (conn) => {
      const end = setTimeout(() => conn.close(), 20_000);
      try {
        return await conn.read(new Uint8Array(1024)) === null;
      } catch {
        return false;
      } finally {
        clearTimeout(end);
      }
    }));
    assertEquals(closed.filter((c) => !c).length, 0, "connections still open after 20 s");
    // Then it serves as before.
    assertEquals(await rawStatus(server.url, "GET", `127.0.0.1:${server.url.port}`), 200);
    assert_(server.log().includes("sent no whole request head within 10 s"), server.log());
  } finally {
    for (const conn of stalled) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    await server.stop();
  }
});
