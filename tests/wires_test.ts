// The byte-stream wires (ws, tcp): a connection without the run's token is refused, frames
// round-trip and malformed ones are named, dccl's ws speaks to npm ws, and tcp's socket calls move
// bytes on a Deno connection.
import { WebSocket } from "ws";
import { assert_, assertEquals } from "./_assert.ts";
import { RESULT_MARK } from "../primitives/launch/rank_report.ts";
import { WS_HEADER_BYTES, WsWire } from "../deno/transports/ws.ts";
import { TCP_WIRE } from "../deno/transports/tcp.ts";
import type { Frame } from "../deno/transports/stream_wire.ts";

import { tokenDigest } from "../deno/transports/rendezvous.ts";
import { POLLIN, socketCalls, socketFd, WOULD_BLOCK } from "../deno/transports/socket_calls.ts";
import { decode, envRank0, rankModule } from "./_process_ranks.ts";

Deno.test("ws: a connection without the run's token is refused before it sends data", async () => {
  const rank0 = envRank0("ws", { WORLD_SIZE: "2", DCCL_TIMEOUT_MS: "5000" });
  const port = await rank0.port;
  try {
    let refused = "";
    for (let i = 0; i < 100 && !refused.includes("401"); i++) {
      refused = await new Promise<string>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}`, {
          headers: { "x-dccl-token": "wrong", "x-dccl-rank": "1" },
        });
        ws.on("open", () => resolve("opened"));
        ws.on("error", (e: Error) => resolve(e.message));
      });
      if (!refused.includes("401")) await new Promise((r) => setTimeout(r, 50));
    }
    assert_(refused.includes("401"), refused);
  } finally {
    rank0.kill();
    await rank0.output();
  }
});

/**
 * `bytes` where the stream engine meets frames: in the middle of a read buffer (at 5, with bytes
 * after it), which is itself a view at an offset of its memory.
 */
function amid(bytes: Uint8Array): Uint8Array {
  const buffer = new Uint8Array(7 + 5 + bytes.byteLength + 3).subarray(7);
  buffer.set(bytes, 5);
  return buffer;
}

Deno.test("ws: frames round-trip, and malformed ones are named, never delivered", () => {
  const [server, client] = [new WsWire(false), new WsWire(true)];
  const wrote = (wire: WsWire, f: Frame) => {
    const b = new Uint8Array(9 + wire.maxHeadBytes).subarray(9); // written at an offset too
    return b.subarray(0, wire.write(b, f));
  };
  const data = wrote(server, { kind: "data", tag: 3, length: 8, total: 8, stamp: 5 });
  const dataFrame: Frame = { kind: "data", tag: 3, length: 8, total: 8, stamp: 5 };
  const dataRead = { frame: dataFrame, bytes: 2 + WS_HEADER_BYTES };
  assertEquals(client.read(data, 4), dataRead);
  const end = 5 + data.byteLength;
  assertEquals(client.read(amid(data), 4, 5, end), dataRead);
  assertEquals(client.read(amid(data), 4, 5, end - 1), undefined, "incomplete");
  for (const f of [{ kind: "probe", tag: 1, stamp: 2 }, { kind: "bye" }] as Frame[]) {
    assertEquals((client.read(wrote(server, f), 4) as { frame: Frame }).frame, f);
  }
  const notice = wrote(client, { kind: "abort", rank: 2, reason: "é".repeat(100) });
  assertEquals(server.read(amid(notice), 4, 5, 5 + notice.byteLength), server.read(notice, 4));
  const read = server.read(notice, 4) as { frame: Frame & { kind: "abort" } };
  assertEquals([read.frame.rank, new TextEncoder().encode(read.frame.reason).byteLength], [2, 123]); // cut to what a close frame carries
  assertEquals(client.read(notice, 4), "a masked frame from a server");
  assertEquals(client.read(data.subarray(0, 10), 4), undefined, "incomplete");
  // A 1 GiB message's head: the 64-bit length.
  const big = wrote(server, { kind: "data", tag: 0, length: 2 ** 30, total: 2 ** 30, stamp: 0 });
  assertEquals((client.read(big, 4) as { frame: { length: number } }).frame.length, 2 ** 30);
  const bad = (bytes: number[] | Uint8Array, wire = client) => wire.read(Uint8Array.from(bytes), 4);
  const withHead = (kind: number, stamp = 0, total = 8) => {
    const b = data.slice();
    new DataView(b.buffer).setUint32(2, kind, true);
    new DataView(b.buffer).setFloat64(10, stamp, true);
    new DataView(b.buffer).setFloat64(18, total, true);
    return b;
  };
  assertEquals(bad(withHead(7)), "bad magic");
  assert_(/call stamp/.test(bad(withHead(0xdcc1, -1)) as string));
  assertEquals(bad(withHead(0xdcc1, 0, 2 ** 40)), `${2 ** 40}-byte message`);
  assertEquals(bad(withHead(0xdcc1, 0, 0.5)), "0.5-byte message");
  assertEquals(bad([0x81, 2, 0x68, 0x69]), "a text frame");
  assertEquals(bad([0x02, 0]), "a fragmented message");
  assertEquals(bad([0xc2, 0]), "reserved bits set (no extension was agreed)");
  assertEquals(bad([0x83, 0]), "reserved opcode 3");
  assertEquals(bad([0x82, 4, 0, 0, 0, 0]), "4-byte frame is shorter than its header");
  assertEquals(bad([0x82, 127, 0xff, 0, 0, 0, 0, 0, 0, 0]), "a frame longer than 2^53 bytes");
  assertEquals(bad([0x89, 126, 0, 200]), "a 200-byte control frame");
  assertEquals(bad([0x88, 2, 0x0f, 0xa4]), "close code 4004 naming rank 4");
  assertEquals(bad([0x88, 1, 0]), "a 1-byte close frame");
  assertEquals(bad(data, server), "an unmasked frame from a client");
  // The client's messages come masked with a zero key: their bytes as they are.
  const fromClient = wrote(client, dataFrame);
  assertEquals(Array.from(fromClient.subarray(1, 6)), [0x80 | (WS_HEADER_BYTES + 8), 0, 0, 0, 0]);
  assertEquals(server.read(fromClient, 4), { frame: dataFrame, bytes: 6 + WS_HEADER_BYTES });
  assertEquals(
    bad([0x82, 0x80 | 32, 1, 0, 0, 0, ...data.subarray(2)], server),
    "a message masked with a key other than zero",
  );
  assertEquals(bad([0x88, 2, 0x03, 0xe9]), {
    frame: { kind: "closed", reason: "closed (code 1001)" },
    bytes: 4,
  });
  assertEquals(bad([0x89, 1, 7]), { frame: { kind: "ping", payload: Uint8Array.of(7) }, bytes: 3 });
});

Deno.test("ws: a dccl rank and a peer built on npm ws understand each other", async () => {
  // The test plays rank 1 with npm `ws` alone: its client dials rank 0, and the one connection
  // carries both ways, the client's messages masked with a zero key (ws's generateMask). Rank 0
  // runs a 2-rank allreduce of rank + 1; the peer answers every message with its own value, 2.
  const token = "interop-token";
  const rank0 = envRank0("ws", {
    WORLD_SIZE: "2",
    DCCL_TOKEN: token,
    DCCL_MODULE: rankModule("sum_rank.ts").href,
  });
  const peer = new WebSocket(`ws://127.0.0.1:${await rank0.port}`, {
    headers: { "x-dccl-token": token, "x-dccl-rank": "1" },
    generateMask: (mask: Uint8Array) => mask.fill(0),
  });
  const closes: number[] = [];
  let answered = 0;
  peer.on("message", (data: Uint8Array, isBinary: boolean) => {
    if (!isBinary) {
      JSON.parse(new TextDecoder().decode(data)); // the rendezvous table
      return peer.send("ack");
    }
    // A message: answer with the same dccl header (kind, tag, stamp, length) and the value 2.
    const reply = new Uint8Array(data.byteLength);
    reply.set(data.subarray(0, WS_HEADER_BYTES));
    if (data.byteLength === WS_HEADER_BYTES + 4) {
      new DataView(reply.buffer).setFloat32(WS_HEADER_BYTES, 2, true);
    }
    peer.send(reply);
    answered++;
  });
  const closed = new Promise<void>((r) =>
    peer.on("close", (code: number) => r(void closes.push(code)))
  );
  await new Promise((r) => peer.once("open", r));
  peer.send(JSON.stringify({ host: "127.0.0.1", port: 9 })); // an address nobody dials
  const out = await rank0.output();
  assertEquals(out.code, 0, decode(out.stderr));
  assert_(out.stdout.includes(RESULT_MARK + "3"), out.stdout);
  assert_(answered >= 1);
  await closed;
  assertEquals(closes, [1000]);
});

/** Opens a raw TCP connection to `port` and sends `hello`; resolves with the status byte, if any. */
async function tcpHello(port: string, hello: Uint8Array): Promise<number | null> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  try {
    await conn.write(hello);
    const status = new Uint8Array(1);
    return (await conn.read(status)) === 1 ? status[0] : null;
  } finally {
    conn.close();
  }
}

function hello(rank: number, token: string, magic = 0x74636364): Uint8Array {
  const b = new Uint8Array(40);
  new DataView(b.buffer).setUint32(0, magic, true);
  new DataView(b.buffer).setUint32(4, rank, true);
  b.set(tokenDigest(token), 8);
  return b;
}

Deno.test("tcp: a connection without the run's token is refused before it sends data", async () => {
  const rank0 = envRank0("tcp", { WORLD_SIZE: "2", DCCL_TIMEOUT_MS: "5000" });
  const port = await rank0.port;
  try {
    // 1: wrong token (or magic), 2: not a rank of the group, 0: accepted.
    assertEquals(await tcpHello(port, hello(1, "wrong")), 1);
    assertEquals(await tcpHello(port, hello(1, "t0ken", 0x12345678)), 1);
    assertEquals(await tcpHello(port, hello(2, "t0ken")), 2);
    assertEquals(await tcpHello(port, hello(0, "t0ken")), 2);
    assertEquals(await tcpHello(port, hello(1, "t0ken")), 0);
  } finally {
    rank0.kill();
    await rank0.output();
  }
});

Deno.test("tcp: frames round-trip, and malformed ones are named, never delivered", () => {
  const wrote = (f: Frame) => {
    const b = new Uint8Array(9 + TCP_WIRE.maxHeadBytes).subarray(9); // written at an offset too
    return b.subarray(0, TCP_WIRE.write(b, f));
  };
  for (
    const f of [
      { kind: "data", tag: 3, length: 8, total: 8, stamp: 5 },
      { kind: "data", tag: 3, length: 8, total: 2 ** 20, stamp: 5 },
      { kind: "probe", tag: 3, stamp: 5 },
      { kind: "bye" },
      { kind: "abort", rank: 3, reason: "why" },
    ] as Frame[]
  ) {
    const b = wrote(f);
    assertEquals(TCP_WIRE.read(b, 4), { frame: f, bytes: b.byteLength });
    assertEquals(TCP_WIRE.read(b.subarray(0, b.byteLength - 1), 4), undefined, "incomplete");
    const end = 5 + b.byteLength;
    assertEquals(TCP_WIRE.read(amid(b), 4, 5, end), { frame: f, bytes: b.byteLength });
    assertEquals(TCP_WIRE.read(amid(b), 4, 5, end - 1), undefined, "incomplete");
  }
  const edited = (f: Frame, at: number, value: number, u32 = false) => {
    const b = wrote(f);
    const v = new DataView(b.buffer, b.byteOffset);
    if (u32) v.setUint32(at, value, true);
    else v.setFloat64(at, value, true);
    return TCP_WIRE.read(b, 4) as string;
  };
  const data: Frame = { kind: "data", tag: 3, length: 8, total: 8, stamp: 5 };
  assertEquals(edited(data, 0, 7, true), "bad magic");
  assert_(/payload/.test(edited(data, 8, 2 ** 40)));
  assert_(/payload/.test(edited(data, 8, 1.5)));
  assert_(/payload/.test(edited({ kind: "abort", rank: 0, reason: "" }, 8, 4096)));
  assert_(/payload/.test(edited({ kind: "probe", tag: 0, stamp: 0 }, 8, 1)));
  assert_(/call stamp/.test(edited(data, 16, -1)));
  assert_(/-byte message/.test(edited(data, 24, 2 ** 40)));
  assert_(/-byte message/.test(edited(data, 24, 1.5)));
  assert_(/naming rank 4/.test(edited({ kind: "abort", rank: 0, reason: "" }, 24, 4)));
});

Deno.test({
  name: "tcp: socket calls find a Deno connection's descriptor and move bytes both ways",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const calls = socketCalls(1);
    assert_(calls, "socket calls are available on Linux with -A");
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const [a, b] = await Promise.all([
      Deno.connect({ hostname: "127.0.0.1", port: (listener.addr as Deno.NetAddr).port }),
      listener.accept(),
    ]);
    try {
      const [fa, fb] = [socketFd(a), socketFd(b)];
      assert_(fa !== undefined && fb !== undefined && fa !== fb, `${fa} ${fb}`);
      assertEquals(Deno.readLinkSync(`/proc/self/fd/${fa}`).startsWith("socket:"), true);
      const got = new Uint8Array(8);
      assertEquals(calls.recv(fb, got), WOULD_BLOCK);
      assertEquals(calls.send(fa, Uint8Array.of(1, 2, 3)), 3);
      let n = WOULD_BLOCK;
      for (const t0 = Date.now(); n === WOULD_BLOCK && Date.now() - t0 < 2000;) {
        await calls.poll(Int32Array.of(fb, POLLIN), 100);
        n = calls.recv(fb, got);
      }
      assertEquals(got.subarray(0, n), Uint8Array.of(1, 2, 3));
      await a.write(Uint8Array.of(4));
      await a.closeWrite();
      await calls.poll(Int32Array.of(fb, POLLIN), 1000);
      assertEquals([calls.recv(fb, got), got[0]], [1, 4]);
      assertEquals(calls.recv(fb, got), 0); // the end of the stream
    } finally {
      a.close();
      b.close();
      listener.close();
    }
  },
});
