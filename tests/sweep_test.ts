// `deno task sweep` when a combination fails: the others are still measured, the index says
// which failed and why, and the report names it (a failed combination is never simply missing).
import { assert_, assertEquals } from "./_assert.ts";

const SWEEP = new URL("../scripts/sweep.ts", import.meta.url).pathname;

/** The process ranks `parent` started (this test's own, whatever other tests run beside it). */
async function ranksOf(parent: number): Promise<number[]> {
  const { stdout } = await new Deno.Command("pgrep", {
    args: ["-P", String(parent), "-f", "process_rank.ts"],
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(stdout).split("\n").filter((l) => l !== "").map(Number);
}

Deno.test("sweep: a combination whose rank dies is named as failed in the index and the report; the rest are measured", async () => {
  const out = await Deno.makeTempDir();
  try {
    const sweep = new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", "--v8-flags=--experimental-wasm-fp16", SWEEP],
        ...["--primitives", "allreduce,bcast", "--transports", "tcp", "--memory", "host"],
        ...["--procs", "2", "--max", "1K", "--out", out],
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // The first combination's ranks, killed as soon as they run.
    let ranks: number[] = [];
    for (const end = Date.now() + 60_000; ranks.length === 0 && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 20));
      ranks = await ranksOf(sweep.pid);
    }
    assert_(ranks.length > 0, "the sweep started no ranks");
    Deno.kill(ranks[0], "SIGKILL");
    const { code, stdout, stderr } = await sweep.output();
    const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assertEquals(code, 1, text);
    const index = Deno.readTextFileSync(`${out}/index.csv`).trim().split("\n");
    assertEquals(index.length, 3, index.join("\n"));
    assert_(/^allreduce,tcp,host,2,failed,0,0,.*RankFailedError/.test(index[1]), index[1]);
    assert_(/^bcast,tcp,host,2,ok,11,0,/.test(index[2]), index[2]);
    const report = Deno.readTextFileSync(`${out}/report.html`);
    assert_(report.includes("<h2>Failed (no curve)</h2>"), "the report names no failure");
    assert_(/allreduce-tcp-host-2<\/td><td>RankFailedError: Rank \d failed/.test(report), report);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
