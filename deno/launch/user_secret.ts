/**
 * The per-user secret that makes a group's token unguessable when an external launcher starts
 * the ranks without `DCCL_TOKEN`: 32 random bytes in `$XDG_CONFIG_HOME/dccl/secret` (or
 * `~/.config/dccl/secret`), created on first use with mode 0600 in a 0700 folder, and shared by a
 * shared home across hosts as ssh keys are. The file is written whole under a temporary name and
 * linked into place, so ranks that start together all read the one that won (docs/security.md).
 * @module
 */

import { join } from "node:path";

/** What {@linkcode readUserSecret} found. */
export interface UserSecret {
  /** The secret's bytes, when they could be read. */
  secret?: Uint8Array;
  /** Where it lives (or would). */
  path?: string;
  /** Why there is no secret, or why it is weaker than it should be (readable by others). */
  problem?: string;
}

const SECRET_BYTES = 32;

/** The secret's path from `env`'s `XDG_CONFIG_HOME` or `HOME`; undefined when neither is set. */
export function userSecretPath(env: Record<string, string | undefined>): string | undefined {
  const config = env.XDG_CONFIG_HOME || (env.HOME && join(env.HOME, ".config"));
  return config ? join(config, "dccl", "secret") : undefined;
}

/** Reads this user's secret, creating it on first use; never throws. */
export function readUserSecret(env: Record<string, string | undefined>): UserSecret {
  const path = userSecretPath(env);
  if (!path) return { problem: "neither XDG_CONFIG_HOME nor HOME is set" };
  try {
    const secret = readSecret(path) ?? createSecret(path);
    const { mode } = Deno.statSync(path);
    if (mode !== null && (mode & 0o077) !== 0) {
      return { secret, path, problem: `${path} is readable by other users (chmod 600 it)` };
    }
    return { secret, path };
  } catch (e) {
    return { path, problem: `cannot read or create ${path}: ${(e as Error).message}` };
  }
}

/** The secret at `path`, or undefined when there is no file yet. */
function readSecret(path: string): Uint8Array | undefined {
  try {
    const bytes = Deno.readFileSync(path);
    if (bytes.length < SECRET_BYTES) throw new Error(`${path} holds fewer than 32 bytes`);
    return bytes;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Writes a new secret under a temporary name and links it to `path`; the first link wins. */
function createSecret(path: string): Uint8Array {
  const folder = join(path, "..");
  Deno.mkdirSync(folder, { recursive: true, mode: 0o700 });
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  Deno.writeFileSync(temp, crypto.getRandomValues(new Uint8Array(SECRET_BYTES)), {
    createNew: true,
    mode: 0o600,
  });
  try {
    Deno.linkSync(temp, path);
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  } finally {
    Deno.removeSync(temp);
  }
  return readSecret(path)!;
}
