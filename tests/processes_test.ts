// The process transports (ws, tcp) with real processes: the correctness matrix, a 2^24-float
// allreduce, every fault (killed rank, missing rank, mismatch, port in use, unreachable master) and
// the env launcher running the CLI. Wires and handshakes: wires_test.ts; variables: env_rank_test.ts.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import type { CheckCase } from "./ranks/check_rank.ts";
import { run as checkRank } from "./ranks/check_rank.ts";
import { joinAsRank0, launchProcesses, liveProcesses } from "../deno/launch/processes.ts";
import { PROCESS_TRANSPORTS } from "../deno/transport_table.ts";

import {
  assertKilledRankNamed,
  decode,
  envRank,
  envRank0,
  rankModule,
  ways,
} from "./_process_ranks.ts";

for (const transport of PROCESS_TRANSPORTS) {
  for (const size of [1, 2, 3, 4, 7, 8]) {
    const [calls, deno] = ways(transport);
    const [named, env] = size === 4 || size === 8 ? deno ?? calls : calls;
    Deno.test(`${transport}: every primitive, algorithm, op and count is exact, ${size} processes${named}`, async () => {
      const cases = matrix(transport, size);
      const wrong = await launchProcesses<number[]>(rankModule("check_rank.ts"), {
        size,
        transport,
        args: cases,
        env,
      }).results;
      assertEquals(failures(cases, wrong), []);
      assertEquals(liveProcesses(), 0);
    });
  }

  for (const [named, env] of ways(transport)) {
    Deno.test(`${transport}: allreduce of 2^24 floats and messages of many frames are exact, 2 processes${named}`, async () => {
      const large = { op: "sum", dtype: "f32", memory: "host", root: 0 } as const;
      // 2^22 + 3 floats: 17 frames, the last one short (FRAGMENT_BYTES in stream_wire.ts). A ring over
      // 3·2^20 + 1 floats sends each step as segments whose last is short, all queued at once.
      const cases: CheckCase[] = [
        { ...large, primitive: "allreduce", algorithm: "auto", count: 2 ** 24 },
        { ...large, primitive: "allreduce", algorithm: "ring", count: 3 * 2 ** 20 + 1 },
        { ...large, primitive: "sendrecv", algorithm: "auto", count: 2 ** 22 + 3 },
        { ...large, primitive: "bcast", algorithm: "binomial", count: 2 ** 22 + 3 },
      ];
      assertEquals(
        await launchProcesses<number[]>(rankModule("check_rank.ts"), {
          size: 2,
          transport,
          args: cases,
          env,
        }).results,
        [[0, 0, 0, 0], [0, 0, 0, 0]],
      );
    });

    Deno.test(`${transport}: a killed process fails the launcher, naming it; no child survives${named}`, async () => {
      let looping!: () => void;
      const running = new Promise<void>((resolve) => looping = resolve);
      const group = launchProcesses(rankModule("loop_rank.ts"), {
        size: 3,
        transport,
        env,
        onLine: (rank, _, line) => rank === 2 && line === "looping" && looping(),
      });
      await Promise.race([running, group.results]);
      group.kill(2);
      await assertRejects(() => group.results, {
        name: "RankFailedError",
        message: /rank 2 was killed/,
      });
      assertEquals(liveProcesses(), 0);
    });

    Deno.test(`${transport}: when a rank dies mid-collective every other rank fails fast, naming it${named}`, async () => {
      await assertKilledRankNamed(transport, env);
    });

    Deno.test(`${transport}: mismatched counts are detected from the message headers${named}`, async () => {
      const lines: string[] = [];
      await assertRejects(
        () =>
          launchProcesses(rankModule("mismatch_rank.ts"), {
            size: 2,
            transport,
            env,
            onLine: (rank, _s, line) => lines.push(`${rank}: ${line}`),
          }).results,
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
    const lead = await joinAsRank0(rankModule("check_rank.ts"), { size, transport, args: cases });
    const mine = await checkRank(lead.comm, cases);
    // Closing waits for every rank's goodbye: rank 0 closes before it waits for the others.
    await lead.comm[Symbol.asyncDispose]();
    const theirs = (await lead.others.results).slice(1) as number[][];
    assertEquals(failures(cases, [mine, ...theirs]), []);
    assertEquals(liveProcesses(), 0);
  });

  Deno.test(`${transport}: a rank that never arrives is a timeout listing the missing ranks`, async () => {
    // Long enough for rank 1's process to start and join on a busy machine.
    const env = { WORLD_SIZE: "3", DCCL_TIMEOUT_MS: "8000" };
    const rank0 = envRank0(transport, env);
    // Rank 1 joins; rank 2 never does. Rank 0 gives up and says whom it missed, and rank 1 says
    // that rank 0 gave up (not that its table was bad).
    const rank1 = envRank(transport, { ...env, RANK: "1", MASTER_PORT: await rank0.port }).output();
    const [out, one] = [await rank0.output(), decode((await rank1).stderr)];
    assertEquals(out.code, 1);
    // Rank 1 counts as arrived once its rendezvous message is in; on a loaded machine its process
    // may start too late for that, and then rank 0 lists it too.
    assert_(
      /ranks? (1, )?2 of 3 never arrived at 127\.0\.0\.1:\d+/.test(decode(out.stderr)),
      `${decode(out.stderr)}\nrank 1: ${one}`,
    );
    assert_(/rank 0 gave up on the rendezvous/.test(one), one);
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
    for (const row of rows) assertEquals(row.trim().split(/\s+/)[8], "0"); // #wrong
    assertEquals(decode(outputs[1].stdout), "");
  });
}
