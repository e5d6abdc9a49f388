// The documented commands under a real external launcher, where one is installed (Open MPI is,
// from Debian's openmpi-bin): ranks join with --launcher env and no DCCL_TOKEN, their token
// derived from the job id mpirun shares. Skipped, saying why, where mpirun is missing.
import { assert_, assertEquals } from "./_assert.ts";

/** Whether mpirun runs here (spawning a missing command throws before any promise). */
async function mpirunInstalled(): Promise<boolean> {
  try {
    return (await new Deno.Command("mpirun", { args: ["--version"], stdout: "null" }).output())
      .success;
  } catch {
    return false;
  }
}

const MPIRUN = await mpirunInstalled();

/** A port nothing listens on now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test({
  name: MPIRUN
    ? "launchers: mpirun -np 2 runs the CLI as README says, without DCCL_TOKEN"
    : "launchers: mpirun -np 2 (skipped: mpirun is not installed; apt-get install openmpi-bin)",
  ignore: !MPIRUN,
  async fn() {
    const script = new URL("../scripts/allreduce.ts", import.meta.url).pathname;
    const env = Deno.env.toObject();
    delete env.DCCL_TOKEN;
    const out = await new Deno.Command("mpirun", {
      args: [
        // As root Open MPI wants to be told; the rest is README's command.
        ...["--allow-run-as-root", "--oversubscribe", "-np", "2"],
        ...["-x", `MASTER_PORT=${freePort()}`, Deno.execPath(), "run", "-A", script],
        ...["--launcher", "env", "--transport", "tcp", "--max", "1K", "--iters", "5"],
      ],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const [stdout, stderr] = [out.stdout, out.stderr].map((b) => new TextDecoder().decode(b));
    assertEquals(out.code, 0, stderr);
    assert_(stdout.startsWith("# dccl allreduce: 2 ranks, transport tcp"), stdout);
    const rows = stdout.split("\n").filter((l) => /^\s+\d/.test(l));
    assertEquals(rows.length, 11, stdout);
    for (const row of rows) assertEquals(row.trim().split(/\s+/)[8], "0", row); // #wrong
    assert_(stdout.includes("# Out of bounds values : 0 OK"), stdout);
  },
});
