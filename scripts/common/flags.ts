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

/** What every flag has: its help line and the short names other tools spell it with. */
interface FlagCommon {
  help: string;
  /**
   * Short names (`-n`) as nccl-tests and OSU spell the flag; a text flag's `bytes` aliases take
   * sizes in bytes (nccl-tests' `-b 8 -e 128M`), passed on with a `B` suffix ({@linkcode size}).
   */
  aliases?: readonly string[];
}

/** A value read as written (a size, an address), checked by the plan. */
export interface TextFlag extends FlagCommon {
  kind?: "text";
  default?: string;
  /** A file or folder path: taken from the folder the task was started in ({@linkcode userPath}). */
  path?: boolean;
  bytes?: boolean;
}

/** A switch without a value: `true` when given. */
export interface SwitchFlag extends FlagCommon {
  kind: "switch";
}

/** An integer from `min` to `max`, or one of `words` (`epoch`). */
export interface IntegerFlag<W extends string = string> extends FlagCommon {
  kind: "integer";
  min: number;
  max: number;
  words?: readonly W[];
  default?: number | W;
}

/** A decimal number (`0.1`, `1e-3`) up to `max`, from `min` (or above it, with `above`). */
export interface NumberFlag extends FlagCommon {
  kind: "number";
  min: number;
  max: number;
  above?: boolean;
  default?: number;
}

/** One of `choices`. */
export interface ChoiceFlag<T extends string = string> extends FlagCommon {
  kind: "choice";
  choices: readonly T[];
  default?: T;
}

/** A comma-separated list of `choices`, each kept once. */
export interface ListFlag<T extends string = string> extends FlagCommon {
  kind: "list";
  choices: readonly T[];
  default?: readonly T[];
}

/** A comma-separated list of integers from `min` to `max`. */
export interface IntegersFlag extends FlagCommon {
  kind: "integers";
  min: number;
  max: number;
  default?: readonly number[];
}

/** A flag: its kind says what its value is once parsed. */
export type FlagSpec =
  | TextFlag
  | SwitchFlag
  | IntegerFlag
  | NumberFlag
  | ChoiceFlag
  | ListFlag
  | IntegersFlag;

/** A task's flags by name. */
export type FlagSpecs = Record<string, FlagSpec>;

/** The value a flag parses to. */
type ValueOf<F> = F extends { kind: "switch" } ? boolean
  : F extends { kind: "integer"; words: readonly (infer W)[] } ? number | W
  : F extends { kind: "integer" | "number" } ? number
  : F extends { kind: "choice"; choices: readonly (infer T)[] } ? T
  : F extends { kind: "list"; choices: readonly (infer T)[] } ? T[]
  : F extends { kind: "integers" } ? number[]
  : string;

/** A switch or a flag with a default always has a value. */
type Always<F> = F extends { kind: "switch" } | { default: unknown } ? true : false;

/** The parsed flags of `S`, each typed by its kind, with the names the command line gave. */
export type Flags<S extends FlagSpecs> =
  & { [K in keyof S as Always<S[K]> extends true ? K : never]: ValueOf<S[K]> }
  & { [K in keyof S as Always<S[K]> extends true ? never : K]?: ValueOf<S[K]> }
  & {
    /** The flags the command line named (not defaulted). */
    readonly given: ReadonlySet<string>;
  };

/** `flags`, with their kinds kept for {@linkcode Flags} to read (`help` and `given` are taken). */
export function defineFlags<const S extends FlagSpecs>(flags: S): S {
  for (const taken of ["help", "given"]) {
    if (taken in flags) throw new Error(`--${taken} is every task's own; name the flag otherwise`);
  }
  return flags;
}

/**
 * `argv` with every alias of `flags` written as its flag (`-n 5` and `-n5` as `--iters 5`), so
 * the rest of a task reads one spelling.
 */
function expandAliases(flags: FlagSpecs, argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    const found = Object.entries(flags).find(([, f]) =>
      f.aliases?.some((a) => arg === a || (arg.startsWith(a) && !arg.startsWith("--")))
    );
    if (!found) {
      out.push(arg);
      continue;
    }
    const [name, f] = found;
    const alias = f.aliases!.find((a) => arg.startsWith(a))!;
    let value = arg.length > alias.length ? arg.slice(alias.length).replace(/^=/, "") : argv[++i];
    if (value === undefined) throw new UsageError(`${alias} (--${name}) needs a value`);
    if (f.kind === undefined && f.bytes && !/B$/i.test(value)) value += "B";
    out.push(`--${name}`, value);
  }
  return out;
}

/**
 * Parses `argv` against `flags` into values of their kinds: every alias read as its flag, every
 * value checked, every path taken as the user meant it; throws UsageError on unknown flags,
 * missing or refused values, and on positional arguments unless `positionals` is given to
 * collect them. (`--help` is taken and left to {@linkcode wantsHelp}.)
 */
export function parseFlags<S extends FlagSpecs>(
  flags: S,
  argv: readonly string[],
  positionals?: string[],
): Flags<S> {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    help: { type: "boolean", short: "h" },
  };
  for (const [name, f] of Object.entries(flags)) {
    options[name] = { type: f.kind === "switch" ? "boolean" : "string" };
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: expandAliases(flags, argv),
      options,
      strict: true,
      allowPositionals: !!positionals,
      tokens: true,
    });
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw parseRefusal((e as Error).message.split("\n")[0], Object.keys(flags));
  }
  positionals?.push(...parsed.positionals);
  const given = new Set(parsed.tokens.flatMap((t) => t.kind === "option" ? [t.name] : []));
  const values: Record<string, unknown> = { given };
  for (const [name, f] of Object.entries(flags)) {
    const written = parsed.values[name];
    values[name] = f.kind === "switch"
      ? written === true
      : typeof written === "string"
      ? valueOf(name, f, written)
      : f.default;
  }
  return values as Flags<S>;
}

/** Whether `argv` asks for the help text (`-h` or `--help` before any `--`). */
export function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return argv.slice(0, end === -1 ? argv.length : end).some((a) => a === "-h" || a === "--help");
}

/** What `parseArgs` refused, said as a UsageError naming the flag and what is accepted. */
function parseRefusal(message: string, names: readonly string[]): UsageError {
  const unknown = message.match(/Unknown option '([^']+)'/);
  if (unknown) {
    const near = nearestFlag(unknown[1], names);
    return new UsageError(
      near
        ? `unknown flag ${unknown[1]}: did you mean --${near}? (-h lists every flag)`
        : `unknown flag ${unknown[1]}; accepted: ${
          names.map((f) => `--${f}`).join(", ")
        } (-h explains each)`,
    );
  }
  const positional = message.match(/Unexpected argument '([^']+)'/);
  if (positional) {
    return new UsageError(`unexpected argument ${positional[1]}: every input is a --flag`);
  }
  const valueless = message.match(/Option '(--[\w-]+)[^']*' argument (?:missing|is ambiguous)/);
  if (valueless) {
    return new UsageError(
      `${valueless[1]} needs a value (write --flag=-x for values starting with -)`,
    );
  }
  return new UsageError(message.replace(/\.$/, ""));
}

/** The value of flag `name` as its kind reads `written`. */
function valueOf(name: string, f: Exclude<FlagSpec, SwitchFlag>, written: string): unknown {
  switch (f.kind) {
    case undefined:
    case "text":
      return f.path ? userPath(written) : written;
    case "integer":
      return f.words?.includes(written) ? written : integer(name, written, f.min, f.max, f.words);
    case "number":
      return number(name, written, f);
    case "choice":
      return oneOf(name, written, f.choices);
    case "list":
      return listOf(name, written, f.choices);
    case "integers":
      return items(name, written, (item) => integer(name, item, f.min, f.max));
  }
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

/** The help text of a task. */
export function usage(command: string, summary: string, flags: FlagSpecs): string {
  const lefts = Object.entries(flags).map(([name, f]) =>
    `  ${f.aliases ? `${f.aliases.join(", ")}, ` : ""}--${name}${f.kind === "switch" ? "" : " X"}`
  );
  // The widest flag still leaves two spaces before its help.
  const width = Math.max(24, ...lefts.map((l) => l.length + 2));
  const lines = Object.values(flags).map((f, i) => {
    const shown = f.kind === "switch" || f.default === undefined ? undefined : String(f.default);
    return `${lefts[i].padEnd(width)}${f.help}${shown !== undefined ? ` (default ${shown})` : ""}`;
  });
  const help = `${"  -h, --help".padEnd(width)}this list`;
  return `usage: deno task ${command} [flags]\n${summary}\n\n${[...lines, help].join("\n")}`;
}

/** `value` if it is one of `accepted`. */
export function oneOf<T extends string>(flag: string, value: string, accepted: readonly T[]): T {
  if ((accepted as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`--${flag} ${value} is not accepted; accepted: ${accepted.join(", ")}`);
}

/** A comma-separated list, each item one of `accepted`, each kept once. */
export function listOf<T extends string>(flag: string, value: string, accepted: readonly T[]): T[] {
  return [...new Set(items(flag, value, (item) => oneOf(flag, item, accepted), accepted))];
}

/** The items of a comma-separated list, each read by `read`; `accepted` names them when none. */
function items<T>(
  flag: string,
  value: string,
  read: (item: string) => T,
  accepted?: readonly string[],
): T[] {
  const found = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (found.length === 0) {
    throw new UsageError(
      `--${flag} needs at least one ${accepted ? `of ${accepted.join(", ")}` : "value"}`,
    );
  }
  return found.map(read);
}

/** An integer in [min, max] (or one of `words`, said in the refusal). */
export function integer(
  flag: string,
  value: string,
  min: number,
  max: number,
  words: readonly string[] = [],
): number {
  const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `--${flag} ${value} is not accepted: expected an integer from ${min} to ${max}` +
        words.map((w) => ` or ${w}`).join(""),
    );
  }
  return n;
}

/**
 * A number written as a decimal (`0.1`, `1e-3`) from `min` to `max`, or above `min` and at most
 * `max` with `above` (a learning rate).
 */
export function number(
  flag: string,
  value: string,
  range: { min: number; max: number; above?: boolean },
): number {
  const { min, max, above } = range;
  const n = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(value) ? Number(value) : NaN;
  if (!((above ? n > min : n >= min) && n <= max)) {
    throw new UsageError(
      `--${flag} ${value} is not accepted: expected a number ${
        above ? `above ${min} and at most ${max} (0.1, 1e-3)` : `from ${min} to ${max}`
      }`,
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
  v: { csv?: string; json?: string },
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
