// The process transports (ws, tcp) with real processes: the correctness matrix, a 2^24-float
// allreduce, every fault (killed rank, missing rank, mismatch, port in use, unreachable master, bad
// token, malformed frames) and the env launcher driven by variables the test sets itself.
import { WebSocket } from "ws";
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import type { CheckCase } from "./ranks/check_rank.ts";
import { rankFromEnv } from "../primitives/launch/env_rank.ts";
import { run as checkRank } from "./ranks/check_rank.ts";
import {
  leadProcesses,
  liveProcesses,
  PORT_MARK,
  spawnProcesses,
  startProcesses,
} from "../primitives/launch/spawn_processes.ts";
import { frameProblem, WS_HEADER_BYTES } from "../primitives/transports/ws.ts";
import { FRAME, readHeader, TCP_HEADER_BYTES, writeHeader } from "../primitives/transports/tcp.ts";
import { MESH_TRANSPORTS, type MeshTransport } from "../primitives/transports/mesh.ts";
import { tokenDigest } from "../primitives/transports/rendezvous.ts";
import {
  POLLIN,
  socketCalls,
  socketFd,
  WOULD_BLOCK,
} from "../primitives/transports/socket_calls.ts";

const rankModule = (name: string) => new URL(`./ranks/${name}`, import.meta.url);
const processRank = new URL("../primitives/launch/process_rank.ts", import.meta.url).pathname;
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

function envRank(transport: MeshTransport, env: Record<string, string>, args = [processRank]) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    env: {
      DCCL_MODULE: rankModule("loop_rank.ts").href,
      DCCL_TOKEN: "t0ken",
      DCCL_TRANSPORT: transport,
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * Starts rank 0 with MASTER_PORT=0, as the local launcher does: `port` is the port it picked
 * (a port chosen by the test and handed over could be taken by a test running beside it).
 */
function envRank0(transport: MeshTransport, env: Record<string, string>, args?: string[]) {
  const child = envRank(transport, { ...env, RANK: "0", MASTER_PORT: "0" }, args).spawn();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const port = (async () => {
    for (;;) {
      const { value, done } = await stdout.read();
      if (done) throw new Error(`rank 0 exited before listening`);
      text += value;
      const line = text.split("\n").find((l) => l.startsWith(PORT_MARK));
      if (line !== undefined) return line.slice(PORT_MARK.length);
    }
  })();
  const output = async () => {
    await port.catch(() => {});
    for (let r = await stdout.read(); !r.done; r = await stdout.read()) text += r.value;
    return {
      code: (await child.status).code,
      stdout: text.split("\n").filter((l) => !l.startsWith(PORT_MARK)).join("\n"),
      stderr: await new Response(child.stderr).bytes(),
    };
  };
  return { port, output, kill: () => child.kill("SIGKILL") };
}

/**
 * tcp's two ways of moving bytes (primitives/transports/socket_calls.ts), each forced so that both
 * run whatever the machine's core count: socket calls, and Deno's own reads and writes.
 */
const TCP_IO = {
  "socket calls": { DCCL_TCP_FFI: "1" },
  "Deno I/O": { DCCL_TCP_FFI: "0" },
} as const;
/** The ways `transport` moves bytes: the test name's suffix and the ranks' environment. */
function ways(transport: MeshTransport): [string, Record<string, string>][] {
  if (transport !== "tcp") return [["", {}]];
  return Object.entries(TCP_IO).map(([io, env]) => [`, ${io}`, env]);
}

for (const transport of MESH_TRANSPORTS) {
  for (const size of [1, 2, 3, 4, 7, 8]) {
    const [calls, deno] = ways(transport);
    const [named, env] = size === 4 || size === 8 ? deno ?? calls : calls;
    Deno.test(`${transport}: every primitive, algorithm, op and count is exact, ${size} processes${named}`, async () => {
      const cases = matrix(transport, size);
      const wrong = await spawnProcesses<number[]>(rankModule("check_rank.ts"), {
        size,
        transport,
        args: cases,
        env,
      });
      assertEquals(failures(cases, wrong), []);
      assertEquals(liveProcesses(), 0);
    });
  }

  for (const [named, env] of ways(transport)) {
    Deno.test(`${transport}: allreduce of 2^24 floats is exact, 2 processes${named}`, async () => {
      const cases: CheckCase[] = [{
        primitive: "allreduce",
        algorithm: "auto",
        count: 2 ** 24,
        op: "sum",
        dtype: "f32",
        memory: "host",
        root: 0,
      }];
      assertEquals(
        await spawnProcesses<number[]>(rankModule("check_rank.ts"), {
          size: 2,
          transport,
          args: cases,
          env,
        }),
        [[0], [0]],
      );
    });

    Deno.test(`${transport}: a killed process fails the launcher, naming it; no child survives${named}`, async () => {
      const group = startProcesses(rankModule("loop_rank.ts"), {
        size: 3,
        transport,
        env,
        onLine: () => {},
      });
      await new Promise((r) => setTimeout(r, 1500));
      group.kill(2);
      await assertRejects(() => group.results, {
        name: "RankFailedError",
        message: /rank 2 was killed/,
      });
      assertEquals(liveProcesses(), 0);
    });

    Deno.test(`${transport}: when a rank dies mid-collective every other rank fails fast, naming it${named}`, async () => {
      const rank0 = envRank0(transport, { ...env, WORLD_SIZE: "3" });
      const port = await rank0.port;
      const others = [1, 2].map((rank) =>
        envRank(transport, { ...env, RANK: String(rank), WORLD_SIZE: "3", MASTER_PORT: port })
          .spawn()
      );
      await new Promise((r) => setTimeout(r, 1500));
      const killedAt = performance.now();
      others[1].kill("SIGKILL");
      for (const out of [await rank0.output(), await others[0].output()]) {
        assertEquals(out.code, 1);
        assert_(
          /PeerFailedError: Rank 2 failed: connection to rank 2 closed/.test(decode(out.stderr)),
          decode(out.stderr),
        );
      }
      await others[1].output();
      assert_(performance.now() - killedAt < 5000, "well within the 30 s timeout");
    });

    Deno.test(`${transport}: mismatched counts are detected from the message headers${named}`, async () => {
      const lines: string[] = [];
      await assertRejects(
        () =>
          spawnProcesses(rankModule("mismatch_rank.ts"), {
            size: 2,
            transport,
            env,
            onLine: (rank, _s, line) => lines.push(`${rank}: ${line}`),
          }),
        { name: "RankFailedError" },
      );
      assert_(
        lines.some((l) => /MismatchError: Rank [01] called allreduce\(sum, 100[01] × f32/.test(l)),
        lines.join("\n"),
      );
    });
  }

  Deno.test(`${transport}: this process as rank 0, with processes started to join it`, async () => {
    const size = 3, cases = matrix(transport, size).filter((c) => c.count === 1000);
    assert_(cases.length > 10, `${cases.length} cases`);
    const lead = await leadProcesses(rankModule("check_rank.ts"), { size, transport, args: cases });
    await using comm = lead.comm;
    const mine = await checkRank(comm, cases);
    const theirs = (await lead.others.results).slice(1).map((r) => JSON.parse(r) as number[]);
    assertEquals(failures(cases, [mine, ...theirs]), []);
    assertEquals(liveProcesses(), 0);
  });

  Deno.test(`${transport}: a rank that never arrives is a timeout listing the missing ranks`, async () => {
    const out = await envRank0(transport, { WORLD_SIZE: "3", DCCL_TIMEOUT_MS: "1000" }).output();
    assertEquals(out.code, 1);
    assert_(
      /ranks 1, 2 of 3 never arrived at 127\.0\.0\.1:\d+/.test(decode(out.stderr)),
      decode(out.stderr),
    );
  });

  Deno.test(`${transport}: port in use and unreachable master are one-line errors`, async () => {
    const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = String((busy.addr as Deno.NetAddr).port);
    try {
      const inUse = await envRank(transport, { RANK: "0", WORLD_SIZE: "2", MASTER_PORT: port })
        .output();
      assertEquals(inUse.code, 1);
      assertEquals(
        decode(inUse.stderr).trim(),
        `Error: port ${port} on 127.0.0.1 is already in use; pick another MASTER_PORT`,
      );
    } finally {
      busy.close();
    }
    const unreachable = await envRank(transport, {
      RANK: "1",
      WORLD_SIZE: "2",
      MASTER_PORT: "1", // nothing listens on tcpmux
      DCCL_TIMEOUT_MS: "800",
    }).output();
    assertEquals(unreachable.code, 1);
    const line = decode(unreachable.stderr).trim();
    assert_(/^CommTimeoutError: rank 1 cannot reach rank 0 at 127\.0\.0\.1:\d+/.test(line), line);
    assert_(!line.includes("\n"));
  });

  Deno.test(`${transport}: the env launcher runs the CLI as 3 processes started by the test`, async () => {
    const script = new URL("../scripts/allreduce.ts", import.meta.url).pathname;
    const args = [script, "--launcher", "env", "--transport", transport, "--max", "1K"];
    args.push("--iters", "3", "--warmup", "1");
    const env = { WORLD_SIZE: "3", MASTER_ADDR: "127.0.0.1" };
    const rank0 = envRank0(transport, env, args);
    const port = await rank0.port;
    const outputs = await Promise.all([
      rank0.output(),
      ...[1, 2].map((rank) =>
        envRank(transport, { ...env, RANK: String(rank), MASTER_PORT: port }, args).output()
      ),
    ]);
    for (const o of outputs) assertEquals(o.code, 0, decode(o.stderr));
    const table = outputs[0].stdout;
    assert_(
      table.startsWith(`# dccl allreduce: 3 ranks, transport ${transport}, memory host`),
      table,
    );
    const rows = table.trim().split("\n").filter((l) => !l.startsWith("#"));
    assertEquals(rows.length, 11);
    for (const row of rows) assertEquals(row.trim().split(/\s+/)[9], "0");
    assertEquals(decode(outputs[1].stdout), "");
  });
}

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

Deno.test("ws: malformed frames are named, never delivered", () => {
  const frame = (bytes: number, fill: (v: DataView) => void) => {
    const b = new Uint8Array(bytes);
    fill(new DataView(b.buffer));
    return b;
  };
  const good = (v: DataView) => {
    v.setUint32(0, 0xdcc1, true);
    v.setFloat64(8, 8, true);
    v.setFloat64(16, 0, true);
  };
  assertEquals(frameProblem(frame(WS_HEADER_BYTES + 8, good), true), undefined);
  assertEquals(frameProblem(frame(WS_HEADER_BYTES + 8, good), false), "text frame");
  assert_(/shorter than its header/.test(frameProblem(new Uint8Array(5), true)!));
  assertEquals(frameProblem(frame(WS_HEADER_BYTES, () => {}), true), "bad magic");
  assert_(/outside a 8-byte message/.test(frameProblem(frame(WS_HEADER_BYTES + 16, good), true)!));
  const huge = (v: DataView) => {
    good(v);
    v.setFloat64(8, 2 ** 40, true);
  };
  assert_(/message length/.test(frameProblem(frame(WS_HEADER_BYTES, huge), true)!));
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

Deno.test("tcp: malformed frames are named, never delivered", () => {
  const header = (h: Partial<Parameters<typeof writeHeader>[1]>) => {
    const b = new Uint8Array(TCP_HEADER_BYTES);
    writeHeader(b, { kind: FRAME.data, tag: 3, length: 8, stamp: 5, rank: 0, ...h });
    return readHeader(b, 4);
  };
  assertEquals(header({}), { kind: FRAME.data, tag: 3, length: 8, stamp: 5, rank: 0 });
  assertEquals(header({ kind: 7 }), "bad magic");
  assert_(/payload/.test(header({ length: 2 ** 40 }) as string));
  assert_(/payload/.test(header({ length: 1.5 }) as string));
  assert_(/payload/.test(header({ kind: FRAME.abort, length: 4096 }) as string));
  assert_(/payload/.test(header({ kind: FRAME.probe, length: 1 }) as string));
  assert_(/call stamp/.test(header({ stamp: -1 }) as string));
  assert_(/naming rank 4/.test(header({ kind: FRAME.abort, length: 0, rank: 4 }) as string));
});

Deno.test("processes: rank, size and transport from torchrun, Open MPI, PMI and Slurm variables", () => {
  const base = { DCCL_TOKEN: "x" };
  assertEquals(
    rankFromEnv({
      ...base,
      RANK: "2",
      WORLD_SIZE: "4",
      MASTER_ADDR: "10.0.0.1",
      MASTER_PORT: "1234",
    }),
    {
      rank: 2,
      size: 4,
      masterAddr: "10.0.0.1",
      masterPort: 1234,
      token: "x",
      source: "torchrun",
      transport: "ws",
    },
  );
  assertEquals(
    rankFromEnv({ ...base, OMPI_COMM_WORLD_RANK: "1", OMPI_COMM_WORLD_SIZE: "2" }).source,
    "Open MPI",
  );
  assertEquals(rankFromEnv({ ...base, PMI_RANK: "0", PMI_SIZE: "3" }).size, 3);
  assertEquals(
    rankFromEnv({ ...base, RANK: "0", WORLD_SIZE: "1", DCCL_TRANSPORT: "tcp" }).transport,
    "tcp",
  );
  assertEquals(rankFromEnv({ ...base, SLURM_PROCID: "7", SLURM_NTASKS: "8" }).rank, 7);
  for (
    const [env, message] of [
      [{ ...base }, /no rank in the environment/],
      [{ RANK: "0", WORLD_SIZE: "2" }, /DCCL_TOKEN is not set/],
      [{ ...base, RANK: "2", WORLD_SIZE: "2" }, /RANK=2 is not a rank from 0 to 1/],
      [{ ...base, RANK: "0", WORLD_SIZE: "2", MASTER_PORT: "99999" }, /MASTER_PORT=99999/],
      [{ ...base, RANK: "1", WORLD_SIZE: "2", MASTER_PORT: "0" }, /only works for rank 0/],
      [
        { ...base, RANK: "0", WORLD_SIZE: "2", DCCL_TRANSPORT: "shm" },
        /DCCL_TRANSPORT=shm .* ws or tcp/,
      ],
    ] as const
  ) {
    try {
      rankFromEnv(env);
      throw new Error("accepted");
    } catch (e) {
      assert_(message.test((e as Error).message), (e as Error).message);
    }
  }
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
