// The registry only lists descriptors: a new algorithm is its descriptor (the file it would live
// in exports one) and a line in a list, and every place that reads the registry finds it — the
// names the CLI accepts, what each transport can run, `auto` between hosts (which prices it by
// its own cost) and on one host (by the sizes it says it wins), a forced pick and its place in
// call stamps.
import { assertEquals, assertThrows } from "./_assert.ts";
import type { HostAlgorithm } from "../primitives/collectives/algorithm.ts";
import { ALLREDUCE_RING } from "../primitives/collectives/allreduce_ring.ts";
import { ALGORITHM_LIST, ALGORITHM_NAMES, AlgorithmTable } from "../primitives/registry.ts";
import {
  algorithmsFor,
  autoAlgorithm,
  pickAlgorithm,
  runnableAlgorithms,
} from "../primitives/auto.ts";
import { TRANSPORT_NAMES, TRANSPORTS } from "../deno/transport_table.ts";
import type { LinkCosts } from "../primitives/types.ts";
import type { CollectiveName } from "../primitives/collectives/collective_table.ts";

/** A throwaway allreduce: the ring's steps, priced as nearly free, winning below 64 B. */
const ALLREDUCE_THROWAWAY: HostAlgorithm<"allreduce"> = {
  name: "throwaway",
  collective: "allreduce",
  needs: "messages",
  run: ALLREDUCE_RING.run,
  cost: ({ latencyUs }) => latencyUs / 1000,
  winsBelow: () => 64,
};
const TABLE = new AlgorithmTable([...ALGORITHM_LIST, ALLREDUCE_THROWAWAY]);
const LINKS: LinkCosts = { latencyUs: 50, usPerByte: 8e-3, reduceUsPerByte: 2.5e-4 };

Deno.test("a new algorithm is one descriptor and one line in a list: where it appears", () => {
  const where: string[] = [];
  if (TABLE.names("allreduce").at(-1) === "throwaway") where.push("the collective's names");
  for (const name of TRANSPORT_NAMES) {
    const transport = TRANSPORTS[name];
    if (algorithmsFor("allreduce", { transport, table: TABLE }).includes("throwaway")) {
      where.push(`runnable on ${name}`);
    }
    const between = autoAlgorithm("allreduce", {
      transport,
      bytes: 1 << 20,
      size: 4,
      links: LINKS,
      table: TABLE,
    });
    if (between === "throwaway") where.push(`auto's pick between hosts on ${name}`);
    const local = (bytes: number) =>
      autoAlgorithm("allreduce", { transport, bytes, size: 4, table: TABLE });
    if (local(16) === "throwaway" && local(64) !== "throwaway") {
      where.push(`auto's pick below 64 B on one host on ${name}`);
    }
  }
  const forced = pickAlgorithm("allreduce", {
    algorithm: "throwaway",
    transport: TRANSPORTS.tcp,
    bytes: 4,
    size: 2,
    table: TABLE,
  });
  where.push(`forced, at stamp index ${forced.index}`);
  // Every transport that offers messages runs it (`gpu`'s ranks send host buffers too); on one
  // host `shm`'s direct access comes first.
  const messages = TRANSPORT_NAMES.flatMap((name) => [
    `runnable on ${name}`,
    `auto's pick between hosts on ${name}`,
    ...(TRANSPORTS[name].offers.includes("shared")
      ? []
      : [`auto's pick below 64 B on one host on ${name}`]),
  ]);
  const last = ALGORITHM_LIST.filter((a) => a.collective === "allreduce").length;
  assertEquals(where, [
    "the collective's names",
    ...messages,
    `forced, at stamp index ${last}`,
  ]);
});

Deno.test("on one host the algorithms of a kind partition the sizes: no two claim the same", () => {
  const ties: string[] = [];
  for (const transport of TRANSPORT_NAMES.map((t) => TRANSPORTS[t])) {
    for (const side of ["host", "device"] as const) {
      for (const collective of Object.keys(ALGORITHM_NAMES) as CollectiveName[]) {
        for (const size of [2, 3, 4, 8]) {
          const byKind = Map.groupBy(
            runnableAlgorithms(collective, { transport, side }),
            (a) => a.needs,
          );
          for (const [kind, algorithms] of byKind) {
            const bounds = algorithms.map((a) => a.winsBelow?.(size) ?? 0).filter((b) => b > 0);
            if (new Set(bounds).size !== bounds.length) {
              ties.push(`${collective} ${kind} on ${transport.name}, ${size} ranks: ${bounds}`);
            }
          }
        }
      }
    }
  }
  assertEquals(ties, []);
  // The measured bounds, as docs/auto.md states them.
  const at = (bytes: number, size: number, transport = TRANSPORTS.worker) =>
    autoAlgorithm("allreduce", { transport, bytes, size });
  assertEquals(
    [at(4, 4), at(512 * 1024, 4), at(4 << 20, 4), at(512 * 1024, 2), at(512 * 1024, 3)],
    ["recursive_doubling", "rabenseifner", "ring", "ring", "ring"],
  );
  // tcp restates recursive doubling's bound between two processes.
  assertEquals([at(1 << 19, 2, TRANSPORTS.tcp), at(1 << 20, 2, TRANSPORTS.tcp)], [
    "recursive_doubling",
    "ring",
  ]);
});

Deno.test("two algorithms of one collective may not share a name", () => {
  assertThrows(
    () => new AlgorithmTable([...ALGORITHM_LIST, { ...ALLREDUCE_THROWAWAY, name: "ring" }]),
    Error,
    /Two allreduce algorithms are named ring/,
  );
});

Deno.test("a forced algorithm the transport cannot run is refused in one line", () => {
  assertThrows(
    () =>
      pickAlgorithm("allreduce", {
        algorithm: "shm_direct",
        transport: TRANSPORTS.tcp,
        bytes: 4,
        size: 2,
      }),
    RangeError,
    new RegExp(
      "^Unknown allreduce algorithm shm_direct for transport tcp with host buffers: expected " +
        `auto, ${algorithmsFor("allreduce", { transport: TRANSPORTS.tcp }).join(", ")}$`,
    ),
  );
});
