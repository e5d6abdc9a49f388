// The registry only lists descriptors: a new algorithm is its descriptor (the file it would live
// in exports one) and a line in a list, and every place that reads the registry finds it — the
// names the CLI accepts, what each transport can run, `auto` between hosts (which prices it by
// its own cost), a forced pick and its place in call stamps.
import { assertEquals, assertThrows } from "./_assert.ts";
import type { HostAlgorithm } from "../primitives/collectives/algorithm.ts";
import { ALLREDUCE_RING } from "../primitives/collectives/allreduce_ring.ts";
import { ALGORITHM_LIST, AlgorithmTable } from "../primitives/registry.ts";
import { algorithmsFor, autoAlgorithm, pickAlgorithm } from "../primitives/auto.ts";
import { TRANSPORT_NAMES, TRANSPORTS } from "../deno/registry.ts";
import type { LinkCosts } from "../primitives/types.ts";

/** A throwaway allreduce: the ring's steps, priced as nearly free. */
const ALLREDUCE_THROWAWAY: HostAlgorithm<"allreduce"> = {
  name: "throwaway",
  collective: "allreduce",
  needs: "messages",
  run: ALLREDUCE_RING.run,
  cost: ({ latencyUs }) => latencyUs / 1000,
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
  }
  const forced = pickAlgorithm("allreduce", {
    algorithm: "throwaway",
    transport: TRANSPORTS.tcp,
    bytes: 4,
    size: 2,
    table: TABLE,
  });
  where.push(`forced, at stamp index ${forced.index}`);
  assertEquals(where, [
    "the collective's names",
    // Every transport that offers messages runs it (`gpu`'s ranks send host buffers too).
    "runnable on shm",
    "auto's pick between hosts on shm",
    "runnable on worker",
    "auto's pick between hosts on worker",
    "runnable on ws",
    "auto's pick between hosts on ws",
    "runnable on tcp",
    "auto's pick between hosts on tcp",
    "runnable on gpu",
    "auto's pick between hosts on gpu",
    "forced, at stamp index 9",
  ]);
  // On one machine (no links) the measured crossovers decide, as for every algorithm.
  const local = { transport: TRANSPORTS.tcp, bytes: 1 << 20, size: 4, table: TABLE };
  assertEquals(autoAlgorithm("allreduce", local), "rabenseifner");
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
    /^Unknown allreduce algorithm shm_direct for transport tcp with host buffers: expected auto, recursive_doubling, ring, rabenseifner$/,
  );
});
