// The stream engine's framing (deno/transports/stream.ts) against a peer that is this test,
// reading and writing raw `tcp` frames, with socket calls and with Deno's I/O: large messages go as
// fragments and come back whole, and a fragment that does not continue the message in progress
// fails the transport, naming the peer.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { CommError } from "../primitives/errors.ts";
import { writeAll } from "../deno/transports/stream_link.ts";
import { FRAGMENT_BYTES, type Frame } from "../deno/transports/stream_wire.ts";
import { TCP_HEADER_BYTES, TCP_WIRE, TcpTransport } from "../deno/transports/tcp.ts";

/** The engine's two ways of moving bytes: socket calls or not. */
const WAYS = { "socket calls": true, "Deno I/O": false } as const;
type Way = keyof typeof WAYS;

/**
 * Rank 0 of a 2-rank `tcp` transport moving bytes the `way` given, whose rank 1 is `peer`, a
 * connection the test drives.
 */
async function withRawPeer(
  way: Way,
  body: (transport: TcpTransport, peer: Deno.TcpConn) => Promise<void>,
): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const dialing = Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
  const conn = await listener.accept();
  const peer = await dialing;
  listener.close();
  const mesh = [{ peer: 1, conn, dialed: false, head: new Uint8Array(0) }];
  const transport = new TcpTransport(0, 2, mesh, { timeoutMs: 5000, socketCalls: WAYS[way] });
  try {
    await body(transport, peer);
  } finally {
    peer.close();
    // The raw peer hangs up without a goodbye: the transport reports it (or the malformed frame
    // that failed it first).
    await transport.close().catch((e) => assert_(e instanceof CommError, String(e)));
  }
}

/** Registers `body` once per way of moving bytes. */
function test(name: string, body: (way: Way) => Promise<void>): void {
  for (const way of Object.keys(WAYS) as Way[]) {
    Deno.test(`stream, ${way}: ${name}`, () => body(way));
  }
}

/** `f`'s bytes on the wire, followed by `payload`. */
function framed(f: Frame, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  const head = new Uint8Array(TCP_WIRE.maxHeadBytes);
  const n = TCP_WIRE.write(head, f);
  const out = new Uint8Array(n + payload.byteLength);
  out.set(head.subarray(0, n));
  out.set(payload, n);
  return out;
}

/** Bytes 0, 1, 2, … (mod 251, so no run of them repeats at a power of two). */
function pattern(n: number, from = 0): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (from + i) % 251;
  return out;
}

test("a message larger than a frame goes as consecutive fragments", async (way) => {
  await withRawPeer(way, async (transport, peer) => {
    // More than the kernel takes at once, so fragments queue (each head must outlive the next),
    // and a short last fragment.
    const fragments = 16, total = (fragments - 1) * FRAGMENT_BYTES + 5;
    const sent = transport.send(1, pattern(total), 7, 9);
    const wire = new Uint8Array(total + fragments * TCP_HEADER_BYTES);
    for (let got = 0; got < wire.byteLength;) {
      const n = await peer.read(wire.subarray(got));
      assert_(n !== null, "the transport closed mid-message");
      got += n;
    }
    await sent;
    const lengths: number[] = [];
    const payload = new Uint8Array(total);
    for (let at = 0, filled = 0; at < wire.byteLength;) {
      const read = TCP_WIRE.read(wire, 2, at);
      assert_(read !== undefined && typeof read !== "string", String(read));
      const f = read.frame as Frame & { kind: "data" };
      assertEquals([f.tag, f.stamp, f.total], [7, 9, total]);
      at += read.bytes;
      payload.set(wire.subarray(at, at + f.length), filled);
      lengths.push(f.length);
      [at, filled] = [at + f.length, filled + f.length];
    }
    assertEquals(lengths, [...new Array(fragments - 1).fill(FRAGMENT_BYTES), 5]);
    assertEquals(payload, pattern(total));
  });
});

test("frames queued behind a large message keep their own heads and bytes", async (way) => {
  await withRawPeer(way, async (transport, peer) => {
    // More than the kernel takes at once: the small messages wait in the queue, each copied
    // behind its head in the link's scratch, which the next message reuses.
    const sizes = [8 * FRAGMENT_BYTES, 100, 50, 3];
    const sent = sizes.map((n, i) => transport.send(1, pattern(n, i), i, 20 + i));
    const expected = sizes.map((n, i) =>
      framed(
        { kind: "data", tag: i, length: Math.min(n, FRAGMENT_BYTES), total: n, stamp: 20 + i },
        pattern(Math.min(n, FRAGMENT_BYTES), i),
      )
    );
    const wire = new Uint8Array(sizes[0] + 8 * TCP_HEADER_BYTES + 3 * TCP_HEADER_BYTES + 153);
    for (let got = 0; got < wire.byteLength;) {
      const n = await peer.read(wire.subarray(got));
      assert_(n !== null, "the transport closed mid-message");
      got += n;
    }
    await Promise.all(sent);
    const tail = wire.subarray(wire.byteLength - 3 * TCP_HEADER_BYTES - 153);
    assertEquals(tail, Uint8Array.from([...expected[1], ...expected[2], ...expected[3]]));
  });
});

test("fragments are received in place, whatever their sizes", async (way) => {
  await withRawPeer(way, async (transport, peer) => {
    const into = new Uint8Array(12);
    const received = transport.recv(1, into, 3);
    const data = (length: number, from: number) =>
      framed({ kind: "data", tag: 3, length, total: 12, stamp: 4 }, pattern(length, from));
    await writeAll(peer, data(5, 0));
    await writeAll(peer, data(0, 5));
    await writeAll(peer, data(7, 5));
    assertEquals(await received, 4);
    assertEquals(into, pattern(12));
  });
});

test("a receive posted while its message arrives takes the rest in place", async (way) => {
  await withRawPeer(way, async (transport, peer) => {
    const data = (length: number, from: number) =>
      framed({ kind: "data", tag: 3, length, total: 12, stamp: 4 }, pattern(length, from));
    await writeAll(peer, data(5, 0));
    await new Promise((r) => setTimeout(r, 50)); // read into a buffer of its own meanwhile
    const into = new Uint8Array(12);
    const received = transport.recv(1, into, 3);
    await writeAll(peer, data(7, 5));
    assertEquals(await received, 4);
    assertEquals(into, pattern(12));
  });
});

test("a receive posted once the one before it completes takes its message in place", async (way) => {
  await withRawPeer(way, async (transport, peer) => {
    // Both messages reach the kernel in one write: reading on past the first, the transport
    // would start the second into a buffer of its own before its receive is posted.
    const size = 24 * 1024;
    const message = (tag: number) =>
      framed({ kind: "data", tag, length: size, total: size, stamp: 4 }, pattern(size, tag));
    const first = new Uint8Array(size), second = new Uint8Array(size);
    const received = transport.recv(1, first, 1);
    await writeAll(peer, Uint8Array.from([...message(1), ...message(2)]));
    await received;
    await transport.recv(1, second, 2);
    assertEquals([first, second], [pattern(size, 1), pattern(size, 2)]);
    assertEquals(transport.unexpectedBytes, 0);
  });
});

test("a fragment that does not continue the message fails the transport", async (way) => {
  const cases: [string, Frame][] = [
    ["another message", { kind: "data", tag: 4, length: 4, total: 12, stamp: 4 }],
    ["another length", { kind: "data", tag: 3, length: 4, total: 13, stamp: 4 }],
    ["too long", { kind: "data", tag: 3, length: 8, total: 12, stamp: 4 }],
  ];
  for (const [name, next] of cases) {
    await withRawPeer(way, async (transport, peer) => {
      const received = transport.recv(1, new Uint8Array(12), 3);
      const first: Frame = { kind: "data", tag: 3, length: 5, total: 12, stamp: 4 };
      await writeAll(peer, framed(first, pattern(5)));
      await writeAll(peer, framed(next, pattern((next as { length: number }).length)));
      await assertRejects(() => received, {
        message: /malformed frame from rank 1: a .*fragment/,
      }).catch((e) => {
        throw new Error(`${name}: ${e.message}`);
      });
    });
  }
  await withRawPeer(way, async (transport, peer) => {
    const received = transport.recv(1, new Uint8Array(12), 3);
    await writeAll(peer, framed({ kind: "data", tag: 3, length: 13, total: 12, stamp: 4 }));
    await assertRejects(() => received, { message: /a 13-byte fragment of a 12-byte message/ });
  });
});

test("a frame longer than a fragment fails the transport at once, naming the limit", async (way) => {
  await withRawPeer(way, async (transport, peer) => {
    const total = 4 * FRAGMENT_BYTES, start = performance.now();
    const received = transport.recv(1, new Uint8Array(total), 3);
    // The head alone: a reader that waited for the payload would wait out the 5 s timeout.
    await writeAll(peer, framed({ kind: "data", tag: 3, length: total, total, stamp: 4 }));
    await assertRejects(() => received, {
      message: new RegExp(`a ${total}-byte frame: frames carry at most ${FRAGMENT_BYTES} bytes`),
    });
    assert_(performance.now() - start < 2000, "it waited instead of refusing the head");
  });
});
