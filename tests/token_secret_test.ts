// The env launcher's token under a hostile local user: never derived from the public run id
// alone, and the per-user secret refused wherever another user could have planted, swapped or
// read it (a file or link of theirs, a folder they own or can write), or where reading it would
// block or never end (a FIFO, a link to /dev/zero). Cases that need another user's files run as
// root (chown to nobody); elsewhere they are ignored, saying why.
import { assert_, assertEquals } from "./_assert.ts";
import { rankFromEnv } from "../deno/launch/env_rank.ts";
import { NO_TMPFS, withTmpfs } from "./_tmpfs.ts";

const RUN = { RANK: "1", WORLD_SIZE: "2", OMPI_MCA_ess_base_jobid: "1275461633" };
const NOBODY = 65534;
const NOT_ROOT = Deno.uid() === 0 ? "" : "files of another user can be made by root only";

/** The one-line refusal rankFromEnv gives for `env` (fails the test if it accepts). */
function refusal(env: Record<string, string>): string {
  try {
    rankFromEnv({ ...RUN, ...env });
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("a token was derived");
}

/** Asserts a refusal that names `what` and says how to go on. */
function assertRefused(env: Record<string, string>, what: RegExp): void {
  const message = refusal(env);
  assert_(!message.includes("\n"), message);
  assert_(what.test(message), message);
  assert_(/export the same secret as DCCL_TOKEN/.test(message), message);
}

/** A fresh home with a secret made by dccl itself; returns it and the secret's path. */
function homeWithSecret(): { home: string; secret: string } {
  const home = Deno.makeTempDirSync();
  rankFromEnv({ ...RUN, HOME: home });
  return { home, secret: `${home}/.config/dccl/secret` };
}

Deno.test("token: without a usable secret nothing is derived from the run id: one line says how to set one", () => {
  assertRefused({}, /neither XDG_CONFIG_HOME nor HOME is set/);
  // DCCL_TOKEN still works with no home at all.
  assertEquals(rankFromEnv({ ...RUN, DCCL_TOKEN: "s" }).token, "s");
});

Deno.test({
  name: "token: a read-only home is refused in one line, naming the folder that cannot be made",
  ignore: NO_TMPFS !== "",
  fn: () =>
    withTmpfs(64 * 1024, (home) => {
      assertRefused({ HOME: home }, new RegExp(`cannot create ${home}/.config/dccl .*writ`));
    }, { readOnly: true }),
});

Deno.test("token: a link, a group-readable secret or a folder others can write is refused, naming it", () => {
  const { home, secret } = homeWithSecret();
  const token = rankFromEnv({ ...RUN, HOME: home }).token;
  Deno.chmodSync(secret, 0o640);
  assertRefused({ HOME: home }, new RegExp(`${secret} can be read or written by other users`));
  Deno.chmodSync(secret, 0o600);
  Deno.chmodSync(`${home}/.config/dccl`, 0o777);
  assertRefused({ HOME: home }, /dccl can be written by other users \(chmod 700 it\)/);
  Deno.chmodSync(`${home}/.config/dccl`, 0o700);
  Deno.chmodSync(home, 0o777);
  assertRefused({ HOME: home }, new RegExp(`${home} can be written by other users`));
  Deno.chmodSync(home, 0o700);
  // A link in place of the secret, even to this user's own secret.
  const other = homeWithSecret();
  Deno.removeSync(other.secret);
  Deno.symlinkSync(secret, other.secret);
  assertRefused({ HOME: other.home }, new RegExp(`${other.secret} is a link`));
  // The secret itself is still good.
  assertEquals(rankFromEnv({ ...RUN, HOME: home }).token, token);
  for (const dir of [home, other.home]) Deno.removeSync(dir, { recursive: true });
});

Deno.test({
  name: "token: a secret or folder planted by another user is refused, naming it",
  ignore: NOT_ROOT !== "",
  fn: () => {
    const { home, secret } = homeWithSecret();
    Deno.chownSync(secret, NOBODY, NOBODY);
    assertRefused({ HOME: home }, new RegExp(`${secret} is owned by uid ${NOBODY}`));
    Deno.chownSync(secret, 0, 0);
    Deno.chownSync(`${home}/.config/dccl`, NOBODY, NOBODY);
    assertRefused({ HOME: home }, new RegExp(`dccl is owned by uid ${NOBODY}, not by you`));
    Deno.chownSync(`${home}/.config/dccl`, 0, 0);
    Deno.chownSync(`${home}/.config`, NOBODY, NOBODY);
    assertRefused(
      { HOME: home },
      new RegExp(`${home}/.config is owned by uid ${NOBODY}, who could replace the secret`),
    );
    Deno.removeSync(home, { recursive: true });
  },
});

Deno.test("token: a FIFO or a link to /dev/zero in place of the secret is refused at once", async () => {
  const { home, secret } = homeWithSecret();
  const module = new URL("../deno/launch/env_rank.ts", import.meta.url).href;
  const attempt = async () => {
    const code = `import { rankFromEnv } from ${JSON.stringify(module)};
      try { rankFromEnv(${JSON.stringify({ ...RUN, HOME: home })}); console.log("accepted"); }
      catch (e) { console.log(e.message); }`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", code],
      stdout: "piped",
      stderr: "inherit",
      signal: AbortSignal.timeout(60_000),
    }).output();
    return new TextDecoder().decode(out.stdout).trim();
  };
  Deno.removeSync(secret);
  await new Deno.Command("mkfifo", { args: ["-m", "600", secret] }).output();
  const fifo = await attempt();
  assert_(new RegExp(`${secret} is not a regular file`).test(fifo), fifo);
  Deno.removeSync(secret);
  Deno.symlinkSync("/dev/zero", secret);
  const zero = await attempt();
  assert_(new RegExp(`${secret} is a link`).test(zero), zero);
  Deno.removeSync(home, { recursive: true });
});
