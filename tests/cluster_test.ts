// The simulated cluster (deno/bench/cluster.ts, `deno task cluster`): a collective and a short
// training run across 2 hosts (network namespaces) through the env launcher, exact, and nothing
// left behind after a run, an error or `down`. Where namespaces cannot be made (not root, no
// `ip netns`), every test here is ignored, its name saying why.
import { assert_, assertEquals } from "./_assert.ts";
import { clusterDown, clusterLeftovers, clusterProblem, clusterUp } from "../deno/bench/cluster.ts";

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

/** The data rows of a benchmark table: [floats, wrong]. */
function rows(stdout: string): [number, number][] {
  return stdout.split("\n").filter((l) => /^\s+\d/.test(l)).map((l) => {
    const cells = l.trim().split(/\s+/);
    return [Number(cells[0]), Number(cells[9])];
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
  assert_(/# trained 1 epochs .* test accuracy \d+\.\d+%/.test(run.stdout), run.stdout);
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
