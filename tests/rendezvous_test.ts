// Rendezvous and early messages on the process meshes (ws, tcp): a hostile or broken peer at
// rendezvous crashes nothing and the real run completes; a message that arrives before its
// receiver has a communicator is still judged against the receiver's calls.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { PORT_MARK, RESULT_MARK } from "../primitives/launch/rank_report.ts";
import { TRANSPORT_TABLE } from "../deno/transport_table.ts";
import { type TransportName } from "../deno/transport_table.ts";
import { closedWithin, frame, rawUpgrade } from "./_raw_ws.ts";
import { tokenDigest } from "../deno/transports/rendezvous.ts";
import { Communicator } from "../primitives/communicator/communicator.ts";
import type { Transport } from "../primitives/transports/transport.ts";
import { createHeapMemory, RankHeap } from "../primitives/memory/heap.ts";
import { RankMemory } from "../primitives/memory/rank_memory.ts";

/** Rank `r` of a 2-rank sum over `transport`, started by hand with a known token. */
function sumRank(transport: TransportName, r: number, port: string, token: string) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../deno/launch/process_rank.ts", import.meta.url).pathname],
    env: {
      DCCL_MODULE: new URL("./ranks/sum_rank.ts", import.meta.url).href,
      DCCL_TOKEN: token,
      DCCL_TRANSPORT: transport,
      DCCL_TIMEOUT_MS: "20000",
      RANK: String(r),
      WORLD_SIZE: "2",
      MASTER_PORT: port,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Starts rank 0 of a hostile-rendezvous test; `finish` runs the real rank 1 and checks the sum. */
async function hostileRendezvous(transport: TransportName, token: string) {
  const rank0 = sumRank(transport, 0, "0", token);
  const reader = rank0.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  while (!stdout.includes(PORT_MARK)) stdout += (await reader.read()).value ?? "";
  const port = Number(stdout.split(PORT_MARK)[1].split("\n")[0]);
  const finish = async () => {
    const rank1 = sumRank(transport, 1, String(port), token);
    const [out1, status0] = await Promise.all([rank1.output(), rank0.status]);
    for (let r = await reader.read(); !r.done; r = await reader.read()) stdout += r.value;
    const stderr0 = new TextDecoder().decode(await new Response(rank0.stderr).arrayBuffer());
    assertEquals([status0.code, out1.code], [0, 0], stderr0);
    assert_(stdout.includes(RESULT_MARK + "3"), stdout);
  };
  return { port, finish };
}

Deno.test("faults: a hostile or broken peer at rendezvous crashes nothing; the real run completes: ws", async () => {
  const token = "s3cret-token";
  const { port, finish } = await hostileRendezvous("ws", token);
  const good = { "x-dccl-token": token, "x-dccl-rank": "1" };

  // Tokens are refused whatever their length; ranks must be plain decimals.
  for (const t of ["", "x", "s3cret-tokem", "s3cret-token-and-more"]) {
    const { status, conn } = await rawUpgrade(port, { ...good, "x-dccl-token": t });
    conn.close();
    assertEquals(status, 401, `token ${t}`);
  }
  for (const r of ["1e0", "0x1", "+1", "01", "1.0", "-0", "2", "0", ""]) {
    const { status, conn } = await rawUpgrade(port, { ...good, "x-dccl-rank": r });
    conn.close();
    assertEquals(status, 400, `rank header ${JSON.stringify(r)}`);
  }
  // Authenticated, then a bad first message: the connection closes and frees rank 1's slot.
  const text = (s: string) => new TextEncoder().encode(s);
  const firsts: [string, Uint8Array][] = [
    ["text, not JSON", frame(1, text("hello"))],
    ["binary", frame(2, text('{"host":"127.0.0.1","port":1}'))],
    ["2 MiB", frame(1, new Uint8Array(2 * 1024 * 1024).fill(32))],
    ["unmasked", frame(1, text('{"host":"127.0.0.1","port":1}'), false)],
    ["reserved opcode", frame(3, text("{}"))],
    ["a number", frame(1, text("42"))],
    ["a bad host", frame(1, text('{"host":"a b","port":1}'))],
    ["a bad port", frame(1, text('{"host":"127.0.0.1","port":70000}'))],
    ["nothing (closed at once)", new Uint8Array(0)],
  ];
  for (const [what, bytes] of firsts) {
    const { status, conn } = await rawUpgrade(port, good);
    assertEquals(status, 101, what);
    if (bytes.byteLength === 0) conn.close();
    else {
      await conn.write(bytes).catch(() => {});
      assert_(await closedWithin(conn, 3000), `${what}: rank 0 kept the connection`);
    }
    await new Promise((r) => setTimeout(r, 200)); // the close reaches rank 0's slot bookkeeping
  }
  // A second connection claiming a rank that is connected is refused.
  const holder = await rawUpgrade(port, good);
  const second = await rawUpgrade(port, good);
  second.conn.close();
  assertEquals(second.status, 409);
  holder.conn.close();
  await new Promise((r) => setTimeout(r, 50));

  await finish();
});

Deno.test("faults: a hostile or broken peer at rendezvous crashes nothing; the real run completes: tcp", async () => {
  const token = "s3cret-token";
  const { port, finish } = await hostileRendezvous("tcp", token);
  const connect = () => Deno.connect({ hostname: "127.0.0.1", port });
  const hello = (rank: number, t = token, magic = 0x74636364) => {
    const b = new Uint8Array(40);
    new DataView(b.buffer).setUint32(0, magic, true);
    new DataView(b.buffer).setUint32(4, rank, true);
    b.set(tokenDigest(t), 8);
    return b;
  };
  /** Sends `bytes` and reads rank 0's answer: its status byte, then whether it closed. */
  const talk = async (bytes: Uint8Array, then?: Uint8Array) => {
    const conn = await connect();
    await conn.write(bytes).catch(() => {});
    const status = new Uint8Array(1);
    const got = await conn.read(status).catch(() => null);
    if (then) await conn.write(then).catch(() => {});
    const closed = then || got !== 1 || status[0] !== 0 ? await closedWithin(conn, 3000) : false;
    if (!closed) conn.close();
    return { status: got === 1 ? status[0] : undefined, closed };
  };
  // Tokens are refused whatever their length; garbage and short hellos get nothing.
  for (const t of ["", "x", "s3cret-tokem", "s3cret-token-and-more"]) {
    assertEquals((await talk(hello(1, t))).status, 1, `token ${t}`);
  }
  assertEquals((await talk(hello(1, token, 0x1234))).status, 1, "bad magic");
  for (const r of [2, 0, 2 ** 31]) assertEquals((await talk(hello(r))).status, 2, `rank ${r}`);
  const short = await connect();
  await short.write(new Uint8Array(10));
  await short.closeWrite();
  assertEquals(await short.read(new Uint8Array(1)), null, "a short hello gets no answer");
  short.close();
  // Authenticated, then a bad address message: the connection closes and frees rank 1's slot.
  const text = (s: string) => new TextEncoder().encode(s);
  const prefixed = (body: Uint8Array, length = body.byteLength) => {
    const out = new Uint8Array(4 + body.byteLength);
    new DataView(out.buffer).setUint32(0, length, true);
    out.set(body, 4);
    return out;
  };
  const firsts: [string, Uint8Array][] = [
    ["not JSON", prefixed(text("hello"))],
    ["2 MiB", prefixed(new Uint8Array(0), 2 * 1024 * 1024)],
    ["4 GiB", prefixed(new Uint8Array(0), 2 ** 32 - 1)],
    ["a number", prefixed(text("42"))],
    ["a bad host", prefixed(text('{"host":"a b","port":1}'))],
    ["a bad port", prefixed(text('{"host":"127.0.0.1","port":70000}'))],
    ["invalid UTF-8", prefixed(Uint8Array.of(0xff, 0xfe))],
  ];
  for (const [what, bytes] of firsts) {
    const { status, closed } = await talk(hello(1), bytes);
    assertEquals([status, closed], [0, true], what);
  }
  // A second connection claiming a rank that is connected is refused; when the holder leaves
  // before the table, its slot is free again.
  const holder = await connect();
  await holder.write(hello(1));
  await holder.read(new Uint8Array(1));
  assertEquals((await talk(hello(1))).status, 3);
  holder.close();
  await new Promise((r) => setTimeout(r, 200)); // the close reaches rank 0's slot bookkeeping
  await finish();
});

for (const mesh of ["tcp", "ws"] as const) {
  Deno.test(`faults: a message that arrived before its receiver had a communicator is still judged: ${mesh}`, async () => {
    // Both ranks in this process. Rank 0 runs ahead: its data reaches rank 1's transport, which
    // reads whatever arrives, before rank 1's communicator (and its call check) exists. Rank 1's
    // receive claims it later and must still see that the calls differ.
    const options = { size: 2, masterAddr: "127.0.0.1", token: "t", timeoutMs: 5000 };
    let joined: Promise<Transport> | undefined;
    const first = await TRANSPORT_TABLE.launchedAs(mesh, "processes").connect({
      ...options,
      rank: 0,
      masterPort: 0,
      onListening: (port: number) =>
        joined = TRANSPORT_TABLE.launchedAs(mesh, "processes").connect({
          ...options,
          rank: 1,
          masterPort: port,
        }),
    });
    const second = await joined!;
    const communicator = (t: Transport) =>
      new Communicator(t, new RankMemory(new RankHeap(createHeapMemory(1))));
    const ahead = communicator(first);
    const early = ahead.allreduce(ahead.alloc(1), { op: "max", algorithm: "recursive_doubling" });
    early.catch(() => {}); // judged below
    await new Promise((r) => setTimeout(r, 100)); // rank 1's transport reads rank 0's message
    const late = communicator(second);
    await assertRejects(
      () => late.allreduce(late.alloc(1), { algorithm: "recursive_doubling" }),
      {
        name: "MismatchError",
        message:
          /^Rank 1 called allreduce\(sum, 1 × f32, recursive_doubling\) but rank 0 called allreduce\(max/,
      },
    );
    // Rank 0 judges rank 1's message itself, or hears rank 1's verdict first.
    await assertRejects(() => early, {
      message: /(^|MismatchError: )Rank [01] called allreduce\((max|sum), .* but rank [01] called/,
    });
    await Promise.all([ahead[Symbol.asyncDispose](), late[Symbol.asyncDispose]()]);
  });
}
