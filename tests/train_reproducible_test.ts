// `deno task train --reproducible`: the same global batch on 1, 2 and 4 ranks, on shm, tcp,
// worker and ws, gives the same weights — the same SHA-256 of the parameters in rank 0's
// checkpoint file — where the plain gradients' sums, ordered by the ranks that share them, do not.
import { assert_, assertEquals } from "./_assert.ts";
import { train } from "./_train.ts";

/** A rank file's score and epoch time before its floats (deno/files/checkpoint.ts). */
const SCORE_BYTES = 32;
/** Parameters of a 784-32-10 MLP. */
const PARAMS = 784 * 32 + 32 + 32 * 10 + 10;

/** The SHA-256 of the parameters in rank 0's checkpoint, and the last loss, after one epoch. */
async function run(flags: Record<string, string>): Promise<{ sha256: string; loss: string }> {
  const dir = await Deno.makeTempDir();
  try {
    const [rank0] = await train({
      epochs: "1",
      "train-samples": "2048",
      "test-samples": "256",
      layers: "784,32,10",
      checkpoint: dir,
      ...flags,
    });
    const meta = JSON.parse(await Deno.readTextFile(`${dir}/checkpoint.json`));
    const bytes = await Deno.readFile(`${dir}/${meta.files[0].name}`);
    const params = bytes.subarray(SCORE_BYTES, SCORE_BYTES + 4 * PARAMS);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", params));
    const sha256 = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    return { sha256, loss: rank0.summary!.epochs.at(-1)!.loss.toFixed(6) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("train --reproducible: the same weights on 1, 2 and 4 ranks and on every transport", async () => {
  // A global batch of 64 rows each time: 64 on one rank, 32 on two, 16 on four.
  const runs = [
    ["1", "shm", "64"],
    ["2", "shm", "32"],
    ["4", "shm", "16"],
    ["2", "tcp", "32"],
    ["2", "worker", "32"],
    ["4", "ws", "16"],
  ];
  const results = [];
  for (const [procs, transport, batch] of runs) {
    results.push(await run({ procs, transport, batch, reproducible: "true" }));
  }
  for (const [i, r] of results.entries()) {
    assertEquals(r, results[0], `${runs[i].join(" ")} against one rank`);
  }
  // The plain sums differ between rank counts, so the comparison above can tell.
  const plain2 = await run({ procs: "2", transport: "shm", batch: "32" });
  const plain4 = await run({ procs: "4", transport: "shm", batch: "16" });
  assert_(
    plain2.sha256 !== plain4.sha256,
    "the plain gradients gave the same bits on 2 and 4 ranks",
  );
});
