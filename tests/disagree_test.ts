// Ranks that disagree (issue: correct under any call pattern). Whatever the disagreement and
// whichever rank only sends, every rank of the group fails with a MismatchError (its own or a
// peer's notice) before its communicator closes, none waits out the timeout, and the launcher
// names the rank that skipped a call — also when the others catch what they are told and return.
// Then: a buffer of another rank is refused on every transport.
import {
  assert_,
  assertEquals,
  assertFailedFast,
  assertRejects,
  FAIL_FAST_TIMEOUT_MS,
} from "./_assert.ts";
import { gpuTest } from "./_gpu.ts";
import type { DisagreeArgs, DisagreeMode } from "./ranks/disagree_rank.ts";
import type { LoneArgs, LoneCollective } from "./ranks/lone_rank.ts";
import { type RankFailedError } from "../mod.ts";
import { TRANSPORT_NAMES, TRANSPORTS } from "../deno/transport_table.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { expectedLine } from "./_expected.ts";

const DISAGREE = new URL("./ranks/disagree_rank.ts", import.meta.url);
const LONE = new URL("./ranks/lone_rank.ts", import.meta.url);
const ROOTED: LoneCollective[] = ["bcast", "reduce", "gather", "scatter"];
const UNROOTED: LoneCollective[] = ["allreduce", "allgather", "reduceScatter", "alltoall"];
/**
 * Every way one rank alone can call differently: a root (rooted collectives), a count, a dtype;
 * the group's root goes round 0, 1, 2 (rank 1 alone may be the group's root, or think it is).
 */
const LONE_MODES: Omit<LoneArgs, "count">[] = [
  ...ROOTED.flatMap((collective) =>
    [0, 1, 2].map((root) => ({ collective, differ: "root" as const, root }))
  ),
  ...[...ROOTED, ...UNROOTED].flatMap((collective, i) =>
    (["count", "dtype"] as const).map((differ, j) => ({ collective, differ, root: (i + j) % 3 }))
  ),
];
/** The ranks' own reports of the mismatches this test makes: marked as expected in the log. */
const onLine = expectedLine;
/** Far above what detection takes: a run that waits it out fails the time check. */
const TIMEOUT_MS = FAIL_FAST_TIMEOUT_MS;

const UNRECEIVED =
  /MismatchError: (Rank 0 sent rank 1 a point-to-point message \(tag 5\) that no receive took|Rank 1 closed its communicator (having received 0 of the 1 messages rank 0 sent it|without receiving the device message \(tag 5\)))/;
/**
 * A call named as differing: by a rank's MismatchError, or by the launcher's verdict from the
 * ranks' call records alone (under load a rank may fail from a peer's notice before its own check
 * quotes one).
 */
const differs = (call: string) =>
  new RegExp(
    `(MismatchError: Rank \\d|its call differs from that of ranks? [\\d, ]+: rank \\d) called ${call}`,
  );
const MODES: [DisagreeMode, RegExp][] = [
  ["all-roots", differs(String.raw`bcast\(\d+ × \w+, root \d`)],
  ["two-roots", differs(String.raw`bcast\(\d+ × \w+, root [01]`)],
  ["bcast-vs-allreduce", differs(String.raw`(bcast|allreduce)\(.* (but|where) ranks? \d.* called`)],
  ["allreduce-vs-bcast", differs(String.raw`(bcast|allreduce)\(.* (but|where) ranks? \d.* called`)],
  ["skip", /^Rank 1 failed: .*MismatchError: Rank [02] called allreduce\(.* but rank 1 had closed/],
  ["unreceived", UNRECEIVED],
  ["sent-after-close", UNRECEIVED],
];

for (const transport of TRANSPORT_NAMES) {
  const processes = TRANSPORTS[transport].launch === "processes";
  const test = transport === "gpu"
    ? gpuTest
    : (name: string, fn: () => Promise<void>) => Deno.test(name, fn);
  // Counts: a 1-float call (pipelined on shm), a 4 KiB one, and one of many messages.
  const counts = processes ? [1, 100_000] : [1, 1024, 100_000];
  test(`disagree: every rank fails, none waits for the timeout: ${transport}`, async () => {
    for (const [mode, message] of MODES) {
      for (const count of counts) {
        const args: DisagreeArgs = { mode, count };
        const start = performance.now();
        const err = await assertRejects(
          () =>
            launchGroup(DISAGREE, { size: 3, transport, args, timeoutMs: TIMEOUT_MS, onLine })
              .results,
          { name: "RankFailedError", message },
        ) as RankFailedError;
        const what = `${mode}, ${count}: ${err.message}`;
        assertFailedFast(start, TIMEOUT_MS, what);
        // Every rank concerned learned: none returned from its communicator as if all was well
        // (a message between ranks 0 and 1 concerns rank 2 only if it hears of it in time).
        const concerned = mode === "unreceived" || mode === "sent-after-close" ? 2 : 3;
        const learned = err.outcomes.slice(0, concerned).map((o) => o.status !== "ok");
        assertEquals(learned, learned.map(() => true), what);
      }
    }
  });

  test(`disagree: a lone rank calling another root, count or dtype is the one blamed, whether or not the ranks catch what they are told: ${transport}`, async () => {
    const wrong: string[] = [];
    for (const mode of LONE_MODES) {
      const variants: { count: number; caught?: boolean }[] = [
        ...(processes ? [1] : [1, 4096]).map((count) => ({ count })),
        { count: 7, caught: true },
      ];
      for (const variant of variants) {
        const args: LoneArgs = { ...mode, ...variant };
        const group = launchGroup(LONE, {
          size: 3,
          transport,
          args,
          timeoutMs: TIMEOUT_MS,
          onLine,
        });
        const err = await group.results.then(() => undefined, (e: RankFailedError) => e);
        const what = `${mode.collective}-${mode.differ} root ${mode.root} ${
          JSON.stringify(variant)
        }`;
        // Where every rank caught its error the group may end well: nothing to blame then.
        if (!err && variant.caught) continue;
        if (err?.failedRank !== 1) wrong.push(`${what}: ${err?.message ?? "no failure"}`);
        else if (!/rank 1 called .* where ranks 0, 2 called/.test(err.message)) {
          wrong.push(`${what}: ${err.message}`);
        }
      }
    }
    assertEquals(wrong, []);
  });

  // Where the calls differ (two-roots, bcast-vs-allreduce, allreduce-vs-bcast: one rank against
  // two) the verdict names the odd rank even if it caught its error; otherwise a rank that failed.
  const ODD: Partial<Record<DisagreeMode, number>> = {
    "two-roots": 0,
    "bcast-vs-allreduce": 0,
    "allreduce-vs-bcast": 1,
    skip: 1,
  };
  test(`disagree: when the ranks catch what they are told and return, the blame still falls on the odd rank or a rank that failed: ${transport}`, async () => {
    for (const [mode] of MODES) {
      for (const count of mode === "skip" ? counts : [1]) {
        const args: DisagreeArgs = { mode, count, caught: true };
        const group = launchGroup<string>(DISAGREE, {
          size: 3,
          transport,
          args,
          timeoutMs: TIMEOUT_MS,
          onLine,
        });
        const err = await group.results.then(() => undefined, (e: RankFailedError) => e);
        // Every rank may have caught its error (then there is nothing to blame).
        if (!err) continue;
        const what = `${mode}, ${count}: ${err.message}`;
        assertEquals(err.name, "RankFailedError", what);
        const odd = ODD[mode];
        if (odd !== undefined) assertEquals(err.failedRank, odd, `${what}: rank ${odd} is odd`);
        else {
          assert_(
            err.outcomes[err.failedRank!].status !== "ok",
            `${what}: it blames a rank that was ok`,
          );
        }
      }
    }
  });
}
