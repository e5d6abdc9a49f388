/**
 * Where a 1-float exchange over `tcp` spends its time, layer by layer: two ranks (workers of this
 * process, each with its own event loop and socket, as processes would be) exchange 4 bytes
 *
 *   1. through the socket calls alone, spinning (the loopback floor `deno task limits` measures);
 *   2. through the transport's `send`/`recv` (framing, the stamp, the inbox, promises);
 *   3. through the Communicator's `send`/`recv` (argument checks, the call log, tags);
 *   4. as the Communicator's 1-float `allreduce` (planning, picking, the algorithm, the reduction).
 *
 * Each step's time above the one before it is what that layer costs. The harness's own row
 * (`deno task sendrecv|allreduce --transport tcp --max 1`) adds its loop. Medians of 21 trials,
 * the layers in turn within each:
 *
 *     deno run -A --v8-flags=--experimental-wasm-fp16 scripts/limits/probes/tcp_layers.ts
 * @module
 */

import { summarize } from "../../../bench/limits/measure.ts";
import { loopbackLimits } from "../loopback.ts";
import { Communicator } from "../../../core.ts";
import { createHeapMemory, RankHeap } from "../../../internal.ts";
import { RankMemory } from "../../../internal.ts";
import { TRANSPORT_TABLE } from "../../../deno/mod.ts";

const PER_TRIAL = 500, TRIALS = 21;
const LAYERS = ["transport send/recv", "communicator send/recv", "communicator allreduce"];

interface Start {
  rank: number;
  port: number;
  token: string;
}

const scope = self as unknown as {
  name?: string;
  onmessage: ((e: MessageEvent<Start>) => void) | null;
  postMessage(m: unknown): void;
};

if (scope.name === "tcp-layers-rank") {
  scope.onmessage = async ({ data: { rank, port, token } }) => {
    const transport = await TRANSPORT_TABLE.launchedAs("tcp", "processes").connect({
      rank,
      size: 2,
      masterAddr: "127.0.0.1",
      masterPort: port,
      token,
      onListening: (p) => rank === 0 && scope.postMessage({ port: p }),
    });
    const peer = 1 - rank, word = new Uint8Array(4), TAG = 77;
    const comm = new Communicator(transport, new RankMemory(new RankHeap(createHeapMemory())));
    // Point-to-point tags are the receive's to judge, so the raw transport's messages pass the
    // communicator's checks.
    const raw = () =>
      Promise.all([transport.send(peer, word, TAG, 0), transport.recv(peer, word, TAG)]);
    const [out, into] = [comm.alloc(1), comm.alloc(1)];
    const exchange = () => Promise.all([comm.send(out, peer), comm.recv(into, peer)]);
    const sum = comm.alloc(1, { memory: "shared" });
    const us = await trials([raw, exchange, () => comm.allreduce(sum)]);
    await comm[Symbol.asyncDispose]();
    scope.postMessage({ us });
  };
} else {
  const floor = (await loopbackLimits()).socketRoundTripUs;
  const ranks = [0, 1].map(() =>
    new Worker(import.meta.url, { type: "module", name: "tcp-layers-rank" })
  );
  const token = crypto.randomUUID();
  const results = ranks.map((w) =>
    new Promise<number[][]>((resolve, reject) => {
      w.onmessage = (e) => {
        if (e.data.port) ranks[1].postMessage({ rank: 1, port: e.data.port, token });
        else resolve(e.data.us);
      };
      w.onerror = (e) => reject(new Error(e.message));
    })
  );
  ranks[0].postMessage({ rank: 0, port: 0, token });
  const [us] = await Promise.all(results);
  ranks.forEach((w) => w.terminate());
  const rows: [string, number][] = [
    ["socket calls, spinning (one way: half the round trip)", floor ? floor.median / 2 : NaN],
    ...LAYERS.map((name, i): [string, number] => [name, summarize(us[i]).median]),
  ];
  console.log("layer                                                   µs per exchange  added");
  rows.forEach(([name, t], i) => {
    const added = i === 0 ? "" : (t - rows[i - 1][1]).toFixed(2).padStart(7);
    console.log(`${name.padEnd(56)}${t.toFixed(2).padStart(15)}  ${added}`);
  });
}

/**
 * µs per call of each of `steps` in each of TRIALS trials, after one trial's worth to warm up;
 * each trial runs every step in turn, so that the machine's drift falls on all of them alike.
 */
async function trials(steps: (() => Promise<unknown>)[]): Promise<number[][]> {
  const us = steps.map((): number[] => []);
  for (let t = -1; t < TRIALS; t++) {
    for (const [k, step] of steps.entries()) {
      const start = performance.now();
      for (let i = 0; i < PER_TRIAL; i++) await step();
      if (t >= 0) us[k].push((performance.now() - start) * 1e3 / PER_TRIAL);
    }
  }
  return us;
}
