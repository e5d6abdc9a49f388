/**
 * The per-user secret that makes a group's token unguessable when an external launcher starts
 * the ranks without `DCCL_TOKEN`: 32 random bytes in `$XDG_CONFIG_HOME/dccl/secret` (or
 * `~/.config/dccl/secret`), created on first use with mode 0600 in a 0700 folder, and shared by a
 * shared home across hosts as ssh keys are. The file is written whole under a temporary name and
 * linked into place, so ranks that start together all read the one that won.
 *
 * A secret is used only where no other local user could have planted, swapped or read it (as
 * OpenSSH's StrictModes judges keys): a regular file, not a link, owned by this user, readable by
 * no one else, 32 bytes to 4 KiB, in a folder of this user's that no one else can write, under
 * folders that only this user or root can change (a root-owned sticky folder such as /tmp
 * counts). It is opened without following links and without blocking, and read bounded, so a
 * FIFO or a link to /dev/zero is refused at once (docs/security.md).
 * @module
 */

import { dirname, join } from "node:path";
import { PlainFileError, readPlainFile } from "../files/plain_file.ts";

/** What {@linkcode readUserSecret} found: the secret, or why there is none this run may use. */
export type UserSecret =
  | { secret: Uint8Array; path: string; problem?: undefined }
  | { secret?: undefined; path?: string; problem: string };

const SECRET_BYTES = 32;
/** The most a secret file may hold: it is read whole, and never more than this. */
const MAX_SECRET_BYTES = 4096;
const STICKY = 0o1000;

/** The secret's path from `env`'s `XDG_CONFIG_HOME` or `HOME`; undefined when neither is set. */
export function userSecretPath(env: Record<string, string | undefined>): string | undefined {
  const config = env.XDG_CONFIG_HOME || (env.HOME && join(env.HOME, ".config"));
  return config ? join(config, "dccl", "secret") : undefined;
}

/**
 * Reads this user's secret, creating it (and its folder) on first use; never throws. `problem`
 * is one clause naming the file or folder refused and why.
 */
export function readUserSecret(env: Record<string, string | undefined>): UserSecret {
  const path = userSecretPath(env);
  if (!path) return { problem: "neither XDG_CONFIG_HOME nor HOME is set" };
  try {
    const me = Deno.uid();
    if (me === null) return { path, problem: "this platform has no user ids to check it by" };
    const folder = dirname(path);
    const problem = folderProblem(folder, me) ?? ancestorsProblem(dirname(folder), me);
    if (problem) return { path, problem };
    const secret = readSecret(path, me) ?? createSecret(path, me);
    return { secret, path };
  } catch (e) {
    return { path, problem: e instanceof Refused ? e.message : `${path}: ${(e as Error).message}` };
  }
}

/** A secret or folder refused: the message is the clause to show. */
class Refused extends Error {}

/** Why the secret's own folder may not hold it (or cannot be made), if so; made when missing. */
function folderProblem(folder: string, me: number): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(folder);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    const parentProblem = ancestorsProblem(dirname(folder), me);
    if (parentProblem) return parentProblem;
    try {
      Deno.mkdirSync(folder, { recursive: true, mode: 0o700 });
    } catch (e) {
      return `cannot create ${folder} (${(e as Error).message}): the config folder must be one ` +
        `you can write`;
    }
    info = Deno.lstatSync(folder);
  }
  if (info.isSymlink) return `${folder} is a link (the secret's folder must be a folder of yours)`;
  if (!info.isDirectory) return `${folder} is not a folder`;
  if (info.uid !== me) return `${folder} is owned by uid ${info.uid}, not by you (uid ${me})`;
  if ((info.mode ?? 0) & 0o022) {
    return `${folder} can be written by other users (chmod 700 it)`;
  }
  return undefined;
}

/**
 * Why a folder above the secret's lets another user swap what lies below it, if it does: each
 * folder of its real path must be owned by this user or root and writable by no one else, unless
 * it is root's and sticky (others cannot rename what they do not own there).
 */
function ancestorsProblem(start: string, me: number): string | undefined {
  let existing = start;
  for (;;) {
    try {
      existing = Deno.realPathSync(existing);
      break;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      const up = dirname(existing);
      if (up === existing) return undefined;
      existing = up;
    }
  }
  for (let dir = existing;; dir = dirname(dir)) {
    const info = Deno.statSync(dir);
    const mode = info.mode ?? 0;
    if (info.uid !== me && info.uid !== 0) {
      return `${dir} is owned by uid ${info.uid}, who could replace the secret below it`;
    }
    if ((mode & 0o022) && !(info.uid === 0 && (mode & STICKY))) {
      return `${dir} can be written by other users, who could replace the secret below it`;
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** The secret at `path`, or undefined when there is no file yet (see the module docs). */
function readSecret(path: string, me: number): Uint8Array | undefined {
  let bytes: Uint8Array | undefined;
  try {
    bytes = readPlainFile(path, {
      maxBytes: MAX_SECRET_BYTES,
      noLinks: true,
      check: (info) =>
        info.uid !== me
          ? `${path} is owned by uid ${info.uid}, not by you (uid ${me})`
          : info.mode & 0o077
          ? `${path} can be read or written by other users (chmod 600 it)`
          : undefined,
    });
  } catch (e) {
    throw e instanceof PlainFileError ? new Refused(e.message) : e;
  }
  if (bytes && bytes.length < SECRET_BYTES) {
    throw new Refused(
      `${path} holds ${bytes.length} bytes (a secret holds ${SECRET_BYTES} to ${MAX_SECRET_BYTES})`,
    );
  }
  return bytes;
}

/** Writes a new secret under a temporary name and links it to `path`; the first link wins. */
function createSecret(path: string, me: number): Uint8Array {
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    Deno.writeFileSync(temp, crypto.getRandomValues(new Uint8Array(SECRET_BYTES)), {
      createNew: true,
      mode: 0o600,
    });
  } catch (e) {
    throw new Refused(`cannot create ${path} (${(e as Error).message})`);
  }
  try {
    Deno.linkSync(temp, path);
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  } finally {
    Deno.removeSync(temp);
  }
  const secret = readSecret(path, me);
  if (!secret) throw new Refused(`${path} vanished as it was created`);
  return secret;
}
