/**
 * Command-line parsing shared by the tasks: flags in, validated values out, and every mistake a
 * one-line {@linkcode UsageError} naming the flag and what it accepts (the tasks exit 2 on it).
 * @module
 */

import { countForms, countOf } from "../../bench/sizes.ts";
import { isIP } from "node:net";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Dtype } from "../../core.ts";

/** Bad command-line input. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A flag: its help line and default (undefined: none). */
export interface FlagSpec {
  help: string;
  default?: string;
  /** A switch without a value. */
  boolean?: boolean;
  /** A file or folder path: tasks take it from the folder they were started in ({@linkcode userPath}). */
  path?: boolean;
  /**
   * Short names (`-n`) as nccl-tests and OSU spell the flag; `bytes` aliases take sizes in bytes
   * (nccl-tests' `-b 8 -e 128M`), passed on with a `B` suffix ({@linkcode size}).
   */
  aliases?: readonly string[];
  bytes?: boolean;
}

/**
 * `argv` with every alias of `flags` written as its flag (`-n 5` and `-n5` as `--iters 5`), so
 * the rest of a task reads one spelling.
 */
export function expandAliases(flags: Record<string, FlagSpec>, argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const found = Object.entries(flags).find(([, f]) =>
      f.aliases?.some((a) => arg === a || (arg.startsWith(a) && !arg.startsWith("--")))
    );
    if (!found || arg === "--") {
      out.push(arg);
      if (arg === "--") out.push(...argv.slice(i + 1));
      if (arg === "--") break;
      continue;
    }
    const [name, f] = found;
    const alias = f.aliases!.find((a) => arg.startsWith(a))!;
    let value = arg.length > alias.length ? arg.slice(alias.length).replace(/^=/, "") : argv[++i];
    if (value === undefined) throw new UsageError(`${alias} (--${name}) needs a value`);
    if (f.bytes && !/B$/i.test(value)) value += "B";
    out.push(`--${name}`, value);
  }
  return out;
}

/**
 * Parses `argv` against `flags` (plus `--help`, returned as `help: "true"`); throws UsageError on
 * unknown flags or missing values, and on positional arguments unless `positionals` is given to
 * collect them.
 */
export function parseFlags(
  flags: Record<string, FlagSpec>,
  argv: string[],
  positionals?: string[],
): Record<string, string | undefined> {
  const options = Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [name, { type: f.boolean ? "boolean" : "string" }]),
  ) as Record<string, { type: "string" | "boolean"; short?: string }>;
  options.help = { type: "boolean", short: "h" };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: !!positionals });
  } catch (e) {
    const message = (e as Error).message.split("\n")[0];
    const unknown = message.match(/Unknown option '([^']+)'/);
    if (unknown) {
      const near = nearestFlag(unknown[1], Object.keys(flags));
      throw new UsageError(
        near
          ? `unknown flag ${unknown[1]}: did you mean --${near}? (-h lists every flag)`
          : `unknown flag ${unknown[1]}; accepted: ${
            Object.keys(flags).map((f) => `--${f}`).join(", ")
          } (-h explains each)`,
      );
    }
    const positional = message.match(/Unexpected argument '([^']+)'/);
    if (positional) {
      throw new UsageError(`unexpected argument ${positional[1]}: every input is a --flag`);
    }
    const valueless = message.match(/Option '(--[\w-]+)[^']*' argument (?:missing|is ambiguous)/);
    if (valueless) {
      throw new UsageError(
        `${valueless[1]} needs a value (write --flag=-x for values starting with -)`,
      );
    }
    throw new UsageError(message.replace(/\.$/, ""));
  }
  positionals?.push(...parsed.positionals);
  const values: Record<string, string | undefined> = {};
  for (const [name, f] of Object.entries(flags)) {
    const v = parsed.values[name];
    values[name] = typeof v === "string" ? v : v === true ? "true" : f.default;
  }
  if (parsed.values.help === true) values.help = "true";
  return values;
}

/**
 * The flag of `names` nearest the unknown `given` (`--proc` → `procs`): one it starts, or one at
 * most two edits away (a third of its length at most); undefined when none is that near.
 */
export function nearestFlag(given: string, names: readonly string[]): string | undefined {
  const typed = given.replace(/^-+/, "").split("=")[0];
  if (typed === "") return undefined;
  const prefixed = names.filter((n) => n.startsWith(typed) || typed.startsWith(n));
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined, bestDistance = Infinity;
  for (const name of names) {
    const d = editDistance(typed, name);
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  return bestDistance <= Math.min(2, Math.ceil(typed.length / 3)) ? best : undefined;
}

/** Levenshtein's distance between `a` and `b`. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/** The names of the flags `argv` gives (`--name` or `--name=value`). */
export function givenFlags(argv: readonly string[]): Set<string> {
  return new Set(argv.filter((a) => a.startsWith("--")).map((a) => a.slice(2).split("=")[0]));
}

/** The help text of a task. */
export function usage(command: string, summary: string, flags: Record<string, FlagSpec>): string {
  const lefts = Object.entries(flags).map(([name, f]) =>
    `  ${f.aliases ? `${f.aliases.join(", ")}, ` : ""}--${name}${f.boolean ? "" : " X"}`
  );
  // The widest flag still leaves two spaces before its help.
  const width = Math.max(24, ...lefts.map((l) => l.length + 2));
  const lines = Object.values(flags).map((f, i) =>
    `${lefts[i].padEnd(width)}${f.help}${f.default !== undefined ? ` (default ${f.default})` : ""}`
  );
  const help = `${"  -h, --help".padEnd(width)}this list`;
  return `usage: deno task ${command} [flags]\n${summary}\n\n${[...lines, help].join("\n")}`;
}

/** `value` if it is one of `accepted`. */
export function oneOf<T extends string>(flag: string, value: string, accepted: readonly T[]): T {
  if ((accepted as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`--${flag} ${value} is not accepted; accepted: ${accepted.join(", ")}`);
}

/** A comma-separated list, each item one of `accepted`. */
export function listOf<T extends string>(flag: string, value: string, accepted: readonly T[]): T[] {
  const items = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (items.length === 0) {
    throw new UsageError(`--${flag} needs at least one of ${accepted.join(", ")}`);
  }
  return [...new Set(items.map((v) => oneOf(flag, v, accepted)))];
}

/** An integer in [min, max]. */
export function integer(flag: string, value: string, min: number, max: number): number {
  const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `--${flag} ${value} is not accepted: expected an integer from ${min} to ${max}`,
    );
  }
  return n;
}

/** A number from `min` to `max` (seconds, say), written as a plain decimal. */
export function number(flag: string, value: string, min: number, max: number): number {
  const n = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) {
    throw new UsageError(
      `--${flag} ${value} is not accepted: expected a number from ${min} to ${max}`,
    );
  }
  return n;
}

/** An IPv4 or IPv6 address, or `localhost`, to listen on. */
export function address(flag: string, value: string): string {
  if (value === "localhost" || isIP(value) !== 0) return value;
  throw new UsageError(
    `--${flag} ${value} is not accepted: expected an IPv4 or IPv6 address of this machine ` +
      `(127.0.0.1, 0.0.0.0 for every interface, ::1) or localhost`,
  );
}

/**
 * The `--csv` and `--json` files of a run, each checked writable up front. A CSV always gets its
 * metadata sidecar (docs/design.md): without `--json`, the CSV's path with `.json`.
 */
export function outputFiles(
  v: Record<string, string | undefined>,
): { csv?: string; json?: string } {
  const csv = v.csv === undefined ? undefined : writableFile("csv", v.csv);
  const json = v.json !== undefined
    ? writableFile("json", v.json)
    : csv === undefined
    ? undefined
    : writableFile("csv", csv.replace(/(\.csv)?$/i, ".json"));
  if (csv !== undefined && json !== undefined && resolve(csv) === resolve(json)) {
    throw new UsageError(`--csv and --json name the same file ${csv}; give them different paths`);
  }
  return { csv, json };
}

/**
 * `path` if a file can be written there: its folder exists and takes new files, and it is not a
 * folder itself. Probes with a temporary file, so nothing is left behind.
 */
export function writableFile(flag: string, path: string): string {
  const refuse = (why: string) => new UsageError(`--${flag} ${path} is not accepted: ${why}`);
  if (path === "") throw refuse("expected a file path");
  const stat = statOrUndefined(path);
  if (stat?.isDirectory) throw refuse("it is a folder; expected a file path");
  const folder = dirname(resolve(path));
  const parent = statOrUndefined(folder);
  if (!parent) {
    const link = linkTarget(folder);
    throw refuse(
      link === undefined
        ? `folder ${folder} does not exist`
        : `folder ${folder} is a link to ${link}, which does not exist`,
    );
  }
  if (!parent.isDirectory) throw refuse(`${folder} is not a folder`);
  probe(folder, refuse);
  if (stat) {
    try {
      Deno.openSync(path, { write: true }).close();
    } catch (e) {
      throw refuse(`cannot write it (${(e as Error).name})`);
    }
  }
  return path;
}

/**
 * `path` if it is a folder that takes new files, or can be created as one; `given` is what the
 * user wrote, for the message (a file path whose folder this is, say).
 */
export function writableFolder(flag: string, path: string, given = path): string {
  const refuse = (why: string) => new UsageError(`--${flag} ${given} is not accepted: ${why}`);
  let existing = resolve(path);
  while (!statOrUndefined(existing)) {
    const link = linkTarget(existing);
    if (link !== undefined) {
      const what = existing === resolve(given) ? "it" : existing;
      throw refuse(`${what} is a link to ${link}, which does not exist`);
    }
    existing = dirname(existing);
  }
  if (!statOrUndefined(existing)!.isDirectory) {
    throw refuse(
      existing === resolve(path) ? "it is a file; expected a folder" : `${existing} is a file`,
    );
  }
  probe(existing, refuse);
  return path;
}

/** Where the link at `path` points, or undefined when `path` is no link. */
function linkTarget(path: string): string | undefined {
  try {
    return Deno.readLinkSync(path);
  } catch {
    return undefined;
  }
}

function statOrUndefined(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(path);
  } catch {
    return undefined;
  }
}

/** Creates and removes a file in `folder`, or throws what `refuse` makes of the failure. */
function probe(folder: string, refuse: (why: string) => Error): void {
  let file: string;
  try {
    file = Deno.makeTempFileSync({ dir: folder, prefix: ".dccl-probe-" });
  } catch (e) {
    throw refuse(`cannot create files in ${folder} (${(e as Error).name})`);
  }
  Deno.removeSync(file);
}

/**
 * A buffer size in elements: `2^20`, `1M` (= 2^20), `4K`, `1G` or a plain integer, from 1 to the
 * largest buffer of `dtype` (1 GiB), or bytes with a `B` suffix (bench/sizes.ts).
 */
export function size(flag: string, value: string, dtype: Dtype): number {
  const n = countOf(value, dtype);
  if (n === undefined) {
    throw new UsageError(`--${flag} ${value} is not accepted: expected ${countForms(dtype)}`);
  }
  return n;
}

/**
 * A file path as the user meant it: `deno task` runs scripts in the project folder, so a relative
 * path is taken from the folder the task was started in (`INIT_CWD`, or `from`).
 */
export function userPath(path: string, from = Deno.env.get("INIT_CWD")): string {
  return from && path !== "" && !isAbsolute(path) ? resolve(from, path) : path;
}
