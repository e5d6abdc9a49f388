// `deno task vs-mpi`: Open MPI (bench/mpi/mpi_coll.c, built with mpicc) and dccl in one run, both
// exact, as CSVs compare reads and a ratio table; on a simulated cluster where namespaces can be
// made. Skipped, saying why, where Open MPI is not installed; without it the task says how to
// install it.
import { assert_, assertEquals } from "./_assert.ts";
import { mpiMissing } from "../scripts/vs_mpi/open_mpi.ts";
import { clusterLeftovers, clusterProblem, clusterUp } from "../scripts/cluster/netns.ts";
import { readResultsFile } from "../deno/files/result_files.ts";

const MISSING = await mpiMissing();
const NO_CLUSTER = MISSING ?? await clusterProblem();
const SCRIPT = new URL("../scripts/vs_mpi.ts", import.meta.url).pathname;

async function vsMpi(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SCRIPT, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

/** Checks a run's files: both libraries' rows exact, at every size, and the ratios written. */
async function checkFiles(out: string, cases: [string, string][]) {
  for (const [name, primitive] of cases) {
    const points = (await Array.fromAsync(readResultsFile(`${out}/${name}`)))
      .filter((p) => p.primitive === primitive);
    assertEquals(points.map((p) => p.floats), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], name);
    assertEquals(points.filter((p) => p.wrong !== 0), [], name);
  }
  const ratios = Deno.readTextFileSync(`${out}/ratios.csv`).trim().split("\n");
  assertEquals(
    ratios[0],
    "case,count,dccl_time_us,mpi_time_us,ratio,pairs_ahead,pairs,verdict",
  );
  assert_(ratios.length >= 3, ratios.join("\n"));
}

Deno.test({
  name: MISSING
    ? `vs-mpi: Open MPI beside dccl (skipped: ${MISSING})`
    : "vs-mpi: Open MPI beside dccl in one run, exact, with the ratio per size",
  ignore: MISSING !== undefined,
  async fn() {
    const out = Deno.makeTempDirSync();
    const r = await vsMpi([
      ...["--procs", "2", "--primitives", "allreduce,bcast", "--max", "1K", "--pairs", "2"],
      ...["--out", out],
    ]);
    assertEquals(r.code, 0, r.stderr);
    // Every size, units in the header, and each size decided over the two pairs.
    const lines = r.stdout.split("\n");
    assert_(
      /^case\s+size\s+dccl µs\s+MPI µs\s+dccl Gb\/s\s+MPI Gb\/s\s+ratio\s+verdict$/.test(lines[0]),
      r.stdout,
    );
    const cells = lines.filter((l) => /^(allreduce|bcast) 2 ranks shm/.test(l));
    assertEquals(cells.length, 22, r.stdout);
    for (const cell of cells) {
      assert_(
        /\s[\d.]+x {2}(ahead|behind|within noise) \(dccl ahead in [012] of 2\)$/.test(cell),
        cell,
      );
    }
    // Progress on stderr as it runs: each pair's runs, the order turned around.
    const progress = r.stderr.split("\n").filter((l) => l.startsWith("dccl vs-mpi: pair"));
    assertEquals(progress.map((l) => l.includes("Open MPI")), [
      true,
      false,
      false,
      false,
      false,
      true,
    ]);
    // The top folder holds the median runs, which compare reads as the table does.
    for (const pair of ["pair-1", "pair-2"]) assert_(Deno.statSync(`${out}/${pair}`).isDirectory);
    await checkFiles(out, [
      ["mpi_2.csv", "allreduce"],
      ["mpi_2.csv", "bcast"],
      ["dccl_allreduce_shm_2.csv", "allreduce"],
      ["dccl_bcast_shm_2.csv", "bcast"],
    ]);
  },
});

Deno.test({
  name: MISSING
    ? `vs-mpi: dccl's refusals come first (skipped: ${MISSING})`
    : "vs-mpi: dccl's refusals come before either library runs, in one line",
  ignore: MISSING !== undefined,
  async fn() {
    const out = `${Deno.makeTempDirSync()}/out`;
    const r = await vsMpi([
      ...["--procs", "2", "--primitives", "alltoallv", "--skew", "zipf:1.2", "--max", "2^28"],
      ...["--out", out],
    ]);
    assertEquals(r.code, 2, r.stderr);
    assert_(
      /^dccl vs-mpi: --max 268435456 does not fit: .* busiest rank/.test(r.stderr) &&
        r.stderr.trim().split("\n").length === 1,
      r.stderr,
    );
    assertEquals(await Deno.stat(out).then(() => "made", () => "not made"), "not made");
  },
});

Deno.test("vs-mpi: without Open MPI it says how to install it, in one line", async () => {
  const r = await vsMpi(["--max", "1K"], { PATH: "/nonexistent" });
  assertEquals(r.code, 2, r.stderr);
  assert_(
    /^dccl vs-mpi: mpicc is not installed: apt-get install -y openmpi-bin libopenmpi-dev/.test(
      r.stderr,
    ) && r.stderr.trim().split("\n").length === 1,
    r.stderr,
  );
});

Deno.test({
  name: NO_CLUSTER
    ? `vs-mpi: on a simulated cluster (skipped: ${NO_CLUSTER})`
    : "vs-mpi: --cluster 2 runs both libraries across two hosts, replaces a killed run's cluster and leaves nothing behind",
  ignore: NO_CLUSTER !== undefined,
  async fn() {
    const out = Deno.makeTempDirSync();
    await clusterUp({ name: "vsmpi", hosts: 1 }); // as a SIGKILLed run leaves it
    const r = await vsMpi([
      "--cluster",
      "2",
      "--transport",
      "tcp",
      "--primitives",
      "allreduce",
      "--max",
      "1K",
      "--out",
      out,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assert_(r.stdout.startsWith("# 2 hosts, links 5gbit"), r.stdout);
    assert_(/^allreduce 2 ranks tcp /m.test(r.stdout), r.stdout);
    await checkFiles(out, [["mpi_2.csv", "allreduce"], ["dccl_allreduce_tcp_2.csv", "allreduce"]]);
    assertEquals(await clusterLeftovers("vsmpi"), []);
  },
});
