// What `auto` knows about the network: the costs every algorithm states (its descriptor's
// `cost`) and the link calibration a group runs when its ranks are on different hosts
// (launch/calibration.ts). Two "hosts" here are two loopback addresses, 127.0.0.1 and 127.0.0.2:
// the rendezvous table tells them apart as it tells real hosts apart.
import { assert_, assertEquals } from "./_assert.ts";
import { decode, envRank, envRank0, rankModule } from "./_process_ranks.ts";
import { type LinksReport, PICK_BYTES } from "./ranks/links_rank.ts";
import { autoAlgorithm, runnableAlgorithms } from "../primitives/auto.ts";
import type { LinkCosts } from "../primitives/types.ts";
import type { CollectiveName } from "../primitives/collectives/collective_table.ts";
import { PROCESS_TRANSPORTS, TRANSPORTS } from "../deno/transport_table.ts";
import { launchProcesses } from "../deno/launch/processes.ts";

/** A 1 Gb/s link with 50 µs of latency, reducing at 4 GB/s. */
const GIGABIT: LinkCosts = { latencyUs: 50, usPerByte: 8e-3, reduceUsPerByte: 2.5e-4 };
const MODELED: CollectiveName[] = ["allreduce", "bcast", "reduce"];
const STREAM = TRANSPORTS[PROCESS_TRANSPORTS[0]];

/** What `auto` picks between hosts linked as `links`. */
const pickBetweenHosts = (c: CollectiveName, bytes: number, size: number, links = GIGABIT) =>
  autoAlgorithm(c, { transport: STREAM, bytes, size, links });

Deno.test("every message algorithm of allreduce, bcast and reduce states its cost", () => {
  for (const collective of MODELED) {
    for (const a of runnableAlgorithms(collective, { transport: STREAM })) {
      if (a.needs !== "messages") continue;
      for (const size of [2, 3, 4, 8]) {
        const us = a.cost?.(GIGABIT, { bytes: 1 << 20, size });
        assert_(
          us !== undefined && us > 0 && Number.isFinite(us),
          `${collective}/${a.name}: ${us}`,
        );
      }
    }
  }
});

Deno.test("between hosts auto picks latency-bound algorithms for small buffers and bandwidth-bound ones for large", () => {
  assertEquals(pickBetweenHosts("allreduce", 4, 4), "recursive_doubling");
  assertEquals(pickBetweenHosts("allreduce", 64 << 10, 4), "rabenseifner");
  assertEquals(pickBetweenHosts("allreduce", 16 << 20, 4), "ring");
  assertEquals(pickBetweenHosts("allreduce", 4, 6), "recursive_doubling");
  assertEquals(pickBetweenHosts("bcast", 16 << 20, 4), "chain");
  assertEquals(pickBetweenHosts("reduce", 16 << 20, 4), "chain");
  // Between two ranks a tree is one message: nothing beats it.
  assertEquals(pickBetweenHosts("bcast", 16 << 20, 2), "binomial");
  // On one host (no links) the measured crossovers decide.
  assertEquals(autoAlgorithm("bcast", { transport: STREAM, bytes: 16 << 20, size: 4 }), "binomial");
});

for (const transport of PROCESS_TRANSPORTS) {
  Deno.test(`${transport}: a group on two hosts measures its links and every rank picks alike`, async () => {
    const env = {
      DCCL_MODULE: rankModule("links_rank.ts").href,
      WORLD_SIZE: "3",
      MASTER_ADDR: "127.0.0.1",
    };
    const rank0 = envRank0(transport, { ...env, DCCL_BIND: "127.0.0.1" });
    const port = await rank0.port;
    const others = [1, 2].map((rank) =>
      envRank(transport, { ...env, RANK: String(rank), MASTER_PORT: port, DCCL_BIND: "127.0.0.2" })
        .output()
    );
    const outputs = [await rank0.output(), ...await Promise.all(others)].map((o) => ({
      code: o.code,
      stdout: typeof o.stdout === "string" ? o.stdout : decode(o.stdout),
      stderr: decode(o.stderr),
    }));
    const reports = outputs.map((o) => {
      assertEquals(o.code, 0, o.stderr);
      return JSON.parse(o.stdout.split("\n").find((l) => l.startsWith("{"))!) as LinksReport;
    });
    for (const r of reports) {
      assert_(r.exact, `rank ${r.rank}: a collective was not exact`);
      assertEquals([r.links, r.picks], [reports[0].links, reports[0].picks]);
    }
    const links = reports[0].links as LinkCosts;
    assert_(links.latencyUs > 0 && links.usPerByte > 0 && links.reduceUsPerByte > 0);
    const expected = MODELED.map((c) => PICK_BYTES.map((b) => pickBetweenHosts(c, b, 3, links)));
    assertEquals(reports[0].picks, expected);
  });

  Deno.test(`${transport}: a group on one host measures nothing`, async () => {
    const reports = await launchProcesses<LinksReport>(rankModule("links_rank.ts"), {
      size: 2,
      transport,
    }).results;
    assertEquals(reports.map((r) => [r.links, r.exact]), [[null, true], [null, true]]);
  });
}
