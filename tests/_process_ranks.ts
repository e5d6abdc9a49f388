// Helpers of the process transport tests: rank processes started the way external launchers
// start them (the env launcher's variables), and the two ways tcp moves bytes.
import { PORT_MARK } from "../primitives/launch/rank_report.ts";
import type { TransportName } from "../deno/transport_table.ts";
import { DEFAULT_TIMEOUT_MS } from "../primitives/types.ts";
import { assert_, assertEquals, assertFailedFast } from "./_assert.ts";

export const rankModule = (name: string): URL => new URL(`./ranks/${name}`, import.meta.url);
export const processRank = new URL("../deno/launch/process_rank.ts", import.meta.url).pathname;
export const decode = (b: Uint8Array): string => new TextDecoder().decode(b);

export function envRank(
  transport: TransportName,
  env: Record<string, string>,
  args: string[] = [processRank],
): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    env: {
      DCCL_MODULE: rankModule("loop_rank.ts").href,
      DCCL_TOKEN: "t0ken",
      DCCL_TRANSPORT: transport,
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * Starts rank 0 with MASTER_PORT=0, as the local launcher does: `port` is the port it picked
 * (a port chosen by the test and handed over could be taken by a test running beside it).
 */
export function envRank0(
  transport: TransportName,
  env: Record<string, string>,
  args?: string[],
): {
  port: Promise<string>;
  /** Resolves once rank 0 has printed `line` (false if it exited first). */
  printed: (line: string) => Promise<boolean>;
  output: () => Promise<{ code: number; stdout: string; stderr: Uint8Array }>;
  kill: () => void;
} {
  const child = envRank(transport, { ...env, RANK: "0", MASTER_PORT: "0" }, args).spawn();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let ended = false;
  const lines = () => text.split("\n");
  const until = async (found: () => boolean) => {
    while (!found() && !ended) {
      const { value, done } = await stdout.read();
      if (done) ended = true;
      else text += value;
    }
    return found();
  };
  const port = until(() => lines().some((l) => l.startsWith(PORT_MARK))).then((ok) => {
    if (!ok) throw new Error(`rank 0 exited before listening`);
    return lines().find((l) => l.startsWith(PORT_MARK))!.slice(PORT_MARK.length);
  });
  const printed = async (line: string) => {
    await port.catch(() => {});
    return await until(() => lines().includes(line));
  };
  const output = async () => {
    await port.catch(() => {});
    await until(() => false);
    return {
      code: (await child.status).code,
      stdout: text.split("\n").filter((l) => !l.startsWith(PORT_MARK)).join("\n"),
      stderr: await new Response(child.stderr).bytes(),
    };
  };
  return { port, printed, output, kill: () => child.kill("SIGKILL") };
}

/**
 * Starts three env ranks of `transport` in a loop of collectives, kills rank 2 and asserts that
 * ranks 0 and 1 fail fast, naming it.
 */
export async function assertKilledRankNamed(
  transport: TransportName,
  env: Record<string, string>,
): Promise<void> {
  const rank0 = envRank0(transport, { ...env, WORLD_SIZE: "3" });
  const port = await rank0.port;
  const others = [1, 2].map((rank) =>
    envRank(transport, { ...env, RANK: String(rank), WORLD_SIZE: "3", MASTER_PORT: port }).spawn()
  );
  assert_(await rank0.printed("looping"), "the group never ran its loop");
  const killedAt = performance.now();
  others[1].kill("SIGKILL");
  // A survivor hears of the death from its read (the connection closed) or from a write to the
  // dead rank (broken pipe, reset), whichever comes first; either way it names rank 2.
  const namesRank2 =
    /PeerFailedError: Rank 2 failed: (connection to rank 2 closed|sending to rank 2 failed)/;
  for (const out of [await rank0.output(), await others[0].output()]) {
    assertEquals(out.code, 1);
    assert_(namesRank2.test(decode(out.stderr)), decode(out.stderr));
  }
  await others[1].output();
  assertFailedFast(killedAt, DEFAULT_TIMEOUT_MS, "a rank that died");
}

/**
 * tcp's two ways of moving bytes (deno/transports/socket_calls.ts), each forced so that both
 * run whatever the machine's core count: socket calls, and Deno's own reads and writes.
 */
export const TCP_IO = {
  "socket calls": { DCCL_TCP_FFI: "1" },
  "Deno I/O": { DCCL_TCP_FFI: "0" },
} as const;
/** The ways `transport` moves bytes: the test name's suffix and the ranks' environment. */
export function ways(transport: TransportName): [string, Record<string, string>][] {
  if (transport !== "tcp") return [["", {}]];
  return Object.entries(TCP_IO).map(([io, env]) => [`, ${io}`, env]);
}
