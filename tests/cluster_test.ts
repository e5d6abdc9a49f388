// The simulated cluster (scripts/cluster/netns.ts, `deno task cluster`): a collective and a short
// training run across 2 hosts (network namespaces) through the env launcher, exact, and nothing
// left behind after a run, an error or `down`; a killed rank named first, whatever order its
// exit is heard in. Where namespaces cannot be made (not root, no
// `ip netns`), every test here is ignored, its name saying why.
import { assert_, assertEquals } from "./_assert.ts";
import {
  clusterDown,
  clusterLeftovers,
  clusterProblem,
  clusterUp,
} from "../scripts/cluster/netns.ts";
import { type ClusterRankEnd, firstFailure } from "../scripts/cluster/cluster_run.ts";

const problem = await clusterProblem();
const NAME = `t${Deno.pid % 10000}`;
const CLUSTER = new URL("../scripts/cluster.ts", import.meta.url).pathname;

function test(name: string, fn: () => Promise<void>) {
  Deno.test({
    name: problem ? `${name} (ignored: ${problem})` : name,
    ignore: problem !== undefined,
    async fn() {
      try {
        await fn();
      } finally {
        await clusterDown(NAME);
      }
      assertEquals(await clusterLeftovers(NAME), [], "the cluster left something behind");
    },
  });
}

async function cluster(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLUSTER, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

/** The data rows of a benchmark table: [count, #wrong]. */
function rows(stdout: string): [number, number][] {
  return stdout.split("\n").filter((l) => /^\s+\d/.test(l)).map((l) => {
    const cells = l.trim().split(/\s+/);
    return [Number(cells[1]), Number(cells[8])];
  });
}

test("cluster: an allreduce across 2 hosts is exact, and a run's own cluster is removed after", async () => {
  const run = await cluster(
    ...["run", "--name", NAME, "--hosts", "2", "--rate", "1gbit", "--"],
    ...["allreduce", "--transport", "tcp", "--max", "64K", "--iters", "20"],
  );
  assertEquals(run.code, 0, run.stderr);
  const table = rows(run.stdout);
  assertEquals(table.map(([floats]) => floats), Array.from({ length: 17 }, (_, i) => 2 ** i));
  assertEquals(table.filter(([, wrong]) => wrong !== 0), []);
  assertEquals(await clusterLeftovers(NAME), []);
});

test("cluster: a hierarchical group across 2 hosts measures its links and its collectives are exact", async () => {
  await clusterUp({ name: NAME, hosts: 2, rate: "1gbit" });
  for (const primitive of ["allreduce", "bcast", "reduce"]) {
    const run = await cluster(
      ...["run", "--name", NAME, "--"],
      ...[primitive, "--transport", "tcp", "--threads", "2", "--max", "64K", "--iters", "10"],
    );
    assertEquals(run.code, 0, run.stderr);
    assert_(/4 ranks \(2 processes × 2 threads\)/.test(run.stdout), run.stdout);
    assert_(
      /# links between hosts .* latency [\d.]+ us, [\d.]+ Gb\/s/.test(run.stdout),
      run.stdout,
    );
    const table = rows(run.stdout);
    assertEquals(table.length, 17);
    assertEquals(table.filter(([, wrong]) => wrong !== 0), []);
  }
});

test("cluster: training runs across 2 hosts under the env launcher", async () => {
  await clusterUp({ name: NAME, hosts: 2 });
  const run = await cluster(
    ...["run", "--name", NAME, "--"],
    ...["train", "--transport", "tcp", "--epochs", "1", "--train-samples", "1000"],
    ...["--test-samples", "200"],
  );
  assertEquals(run.code, 0, run.stderr);
  assert_(/2 ranks on tcp/.test(run.stdout), run.stdout);
  assert_(/# trained 1 epoch in .* test accuracy \d+\.\d+%/.test(run.stdout), run.stdout);
});

test("cluster: up, down, and one-line errors for what cannot be done", async () => {
  const up = await cluster("up", "--name", NAME, "--hosts", "3", "--rate", "500mbit");
  assertEquals(up.code, 0, up.stderr);
  assertEquals(
    up.stdout.trim().split("\n").map((l) => l.split(" ")[0]),
    [0, 1, 2].map((i) => `${NAME}h${i}`),
  );
  const again = await cluster("up", "--name", NAME, "--hosts", "2");
  assertEquals([again.code, again.stderr.trim()], [
    1,
    `dccl cluster: cluster ${NAME} is up already: take it down first`,
  ]);
  const wrongHosts = await cluster("run", "--name", NAME, "--hosts", "2", "--", "allreduce");
  assertEquals(wrongHosts.code, 2, wrongHosts.stderr);
  assert_(/--hosts 2: cluster t\d+ has 3/.test(wrongHosts.stderr), wrongHosts.stderr);
  const down = await cluster("down", "--name", NAME);
  assertEquals(down.code, 0, down.stderr);
  assertEquals(await clusterLeftovers(NAME), []);
  for (
    const [args, message] of [
      [["up", "--name", NAME], /up needs --hosts/],
      [["run", "--name", NAME, "--", "nonsense"], /run -- nonsense is not accepted: name a task/],
      [
        ["run", "--name", NAME, "--", "allreduce"],
        /no cluster t\d+ is up: run up first, or give --hosts/,
      ],
      [["fly"], /fly is not accepted: the actions are up, down, run/],
      [["up", "--name", "Bad-Name", "--hosts", "2"], /--name Bad-Name is not accepted/],
    ] as const
  ) {
    const r = await cluster(...args);
    assertEquals(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert_(message.test(r.stderr) && r.stderr.trim().split("\n").length === 1, r.stderr);
  }
});

/** A cluster task started in the background: its output so far, and when a table row came. */
function started(...args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLUSTER, ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = { stdout: "", stderr: "" };
  let row!: () => void;
  const measuring = new Promise<void>((resolve) => row = resolve);
  const read = async (stream: ReadableStream<Uint8Array>, key: "stdout" | "stderr") => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      out[key] += text;
      if (rows(out.stdout).length > 0) row();
    }
  };
  const done = Promise.all([read(child.stdout, "stdout"), read(child.stderr, "stderr")])
    .then(() => child.status).then((s) => ({ ...out, code: s.code }));
  return { child, measuring, done };
}

/** A run still measuring seconds after its first row (the tests stop it, or wait). */
const LONG_RUN = "allreduce --transport tcp --min 256K --max 2M --iters 100".split(" ");

test("cluster: a second run of one name refuses in one line while the first runs", async () => {
  const first = started("run", "--name", NAME, "--hosts", "2", "--", ...LONG_RUN);
  await first.measuring;
  const second = await cluster("run", "--name", NAME, "--hosts", "2", "--", "allreduce");
  assertEquals(second.code, 1, second.stderr);
  assert_(
    new RegExp(
      `^dccl cluster: cluster ${NAME} is in use by process ${first.child.pid} \\(cluster run\\): ` +
        `wait for it to end, or give another --name\\n$`,
    ).test(second.stderr),
    second.stderr,
  );
  const { code, stdout, stderr } = await first.done;
  assertEquals(code, 0, stderr);
  assertEquals(rows(stdout).filter(([, wrong]) => wrong !== 0), []);
});

for (const [signal, code] of [["SIGHUP", 129], ["SIGTERM", 143]] as const) {
  test(`cluster: ${signal} during a run removes the cluster and its ranks, exit ${code}`, async () => {
    const run = started("run", "--name", NAME, "--hosts", "2", "--", ...LONG_RUN);
    await run.measuring;
    run.child.kill(signal);
    const end = await run.done;
    assertEquals(end.code, code, end.stderr);
    assertEquals(await clusterLeftovers(NAME), []);
    const ranks = await new Deno.Command("pgrep", {
      args: ["-f", `${CLUSTER}|--bind 10\\.212\\.0\\.`],
    })
      .output();
    assertEquals(new TextDecoder().decode(ranks.stdout), "", "a rank or the task survived");
  });
}

test("cluster: a process killed with SIGKILL is named as the one that failed first, and how", async () => {
  await clusterUp({ name: NAME, hosts: 2 });
  const run = started("run", "--name", NAME, "--", ...LONG_RUN);
  await run.measuring;
  const pids = await new Deno.Command("ip", { args: ["netns", "pids", `${NAME}h1`] }).output();
  for (const pid of new TextDecoder().decode(pids.stdout).split("\n").filter(Boolean)) {
    Deno.kill(Number(pid), "SIGKILL");
  }
  const end = await run.done;
  assertEquals(end.code, 1, end.stderr);
  assert_(
    new RegExp(`^dccl cluster: rank 1 on ${NAME}h1 was killed by SIGKILL first`, "m")
      .test(end.stderr),
    end.stderr,
  );
});

Deno.test("cluster: the rank killed by a signal is named first, whichever exit the launcher heard of first", () => {
  const end = (rank: number, at: number, signal: Deno.Signal | null = null, code = 1) =>
    ({ rank, host: `h${rank}`, code, signal, at }) as ClusterRankEnd;
  const killed = end(1, 120, "SIGKILL", 137);
  assertEquals(firstFailure([end(0, 100), killed, end(2, 130)]), killed);
  assertEquals(firstFailure([end(0, 100), end(1, 5000, "SIGKILL", 137)])?.rank, 0, "long after");
  assertEquals(firstFailure([end(0, 300), end(1, 200), end(2, 0, null, 0)])?.rank, 1);
  assertEquals(firstFailure([end(0, 1, null, 0)]), undefined);
});
