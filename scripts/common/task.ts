/**
 * What every `deno task` of dccl shares: flags → a validated plan → a run → an exit code, and one
 * line on stderr for each way a task stops. Exit codes: 0 done, 1 failed (or wrong results), 2
 * bad input (nothing ran), 128 + the signal's number when a signal stopped it (130 Ctrl-C, 143
 * SIGTERM, 129 SIGHUP; what finished is kept), as a shell reports a process a signal killed.
 * @module
 */

import { RankFailedError } from "../../core.ts";
import { gpuUnavailable } from "../../internal.ts";
import { type Flags, type FlagSpecs, parseFlags, usage, UsageError, wantsHelp } from "./flags.ts";

/** Most ranks one machine runs. */
export const MAX_PROCS = 256;

/** One task's stages (`S`: its flags); {@linkcode taskMain} runs them. */
export interface Task<P, S extends FlagSpecs = FlagSpecs> {
  /** The task's name (`deno task <name>`); its lines start `dccl <name>:`. */
  name: string;
  /** What the usage line shows after `deno task` (the name unless given: positionals, say). */
  synopsis?: string;
  /** One line for `--help`. */
  summary: string;
  flags: S;
  /** It takes positional arguments (files, a study). */
  positionals?: boolean;
  /** Writes other tools' spellings as the task's own flags first (nccl-tests', OSU's). */
  habits?(argv: readonly string[]): string[];
  /**
   * Turns the parsed flags, positionals and the command line into a plan; a UsageError for
   * anything not accepted.
   */
  plan(flags: Flags<S>, positionals: string[], argv: string[]): P | Promise<P>;
  /** Notes to print before running (a lowered default, say). */
  notes?(plan: P): string[];
  /**
   * Runs the plan (for the command line `argv`) until done or `signal` aborts; resolves with the
   * exit code (0, or 1).
   */
  run(plan: P, signal: AbortSignal, argv: string[]): Promise<number>;
  /**
   * The run stopped early (`interrupted`: by a signal): removes what it left half-written and
   * says what it kept, to end the line that reports it.
   */
  stopped?(plan: P, interrupted: boolean): string | undefined;
}

/** Runs `task` on the command line `argv`; resolves with the exit code. */
export async function taskMain<P, S extends FlagSpecs>(
  task: Task<P, S>,
  argv: string[],
): Promise<number> {
  const command = `dccl ${task.name}`;
  let plan: P;
  try {
    const positionals: string[] = [];
    argv = task.habits?.(argv) ?? argv;
    if (wantsHelp(argv)) {
      console.log(usage(task.synopsis ?? task.name, task.summary, task.flags));
      return 0;
    }
    const flags = parseFlags(task.flags, argv, task.positionals ? positionals : undefined);
    plan = await task.plan(flags, positionals, argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${command}: ${e.message}`);
    return 2;
  }
  for (const note of task.notes?.(plan) ?? []) console.error(`${command}: note: ${note}`);
  try {
    return await interruptible((signal) => task.run(plan, signal, argv));
  } catch (e) {
    return stoppedBy(command, e, task.stopped?.(plan, e instanceof Interrupted));
  }
}

/**
 * Prints why a run stopped as one line (`kept`: what it kept, to end the line); returns the exit
 * code.
 */
export function stoppedBy(command: string, e: unknown, kept = ""): number {
  if (!(e instanceof Error)) throw e;
  const file = fileFailure(e);
  console.error(`${command}: ${(file?.message ?? e.message).split("\n")[0]}${kept}`);
  if (file) return file.code;
  return e instanceof UsageError ? 2 : e instanceof Interrupted ? e.exitCode : 1;
}

/**
 * Errors a rank reports about a file, which the user reads as such rather than as a rank's
 * failure, with the task's exit code: an output it could not write (`cannot write <file>: <why>`,
 * 1) or a checkpoint it cannot go on from (bad input, 2).
 */
const FILE_FAILURES: Record<string, number> = { OutputError: 1, CheckpointError: 2 };

function fileFailure(e: Error): { message: string; code: number } | undefined {
  if (!(e instanceof RankFailedError)) return undefined;
  const reason = e.outcomes[e.failedRank!]?.reason ?? "";
  const name = reason.slice(0, reason.indexOf(": "));
  if (!Object.hasOwn(FILE_FAILURES, name)) return undefined;
  return { message: reason.slice(name.length + 2), code: FILE_FAILURES[name] };
}

/** The signals that stop a run, each with its number (the exit code is 128 + it). */
const STOP_SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;

/** Why a run stopped early: Ctrl-C, SIGTERM or SIGHUP. */
export class Interrupted extends Error {
  override name = "Interrupted";
  /** The signal that stopped it. */
  readonly signal: keyof typeof STOP_SIGNALS;

  /** Stopped by `signal`. */
  constructor(signal: keyof typeof STOP_SIGNALS) {
    super(`interrupted by ${signal}`);
    this.signal = signal;
  }

  /** The exit code a shell gives a process `signal` killed. */
  get exitCode(): number {
    return 128 + STOP_SIGNALS[this.signal];
  }
}

/**
 * Aborts the signal `body` gets on SIGINT, SIGTERM or SIGHUP (a closed terminal); once one came,
 * however `body` fails (a process rank the same Ctrl-C killed, say), it rejects with the
 * {@linkcode Interrupted} reason.
 */
export async function interruptible<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const signals = Object.keys(STOP_SIGNALS) as (keyof typeof STOP_SIGNALS)[];
  const handlers = signals.map((s) => {
    const h = () => controller.abort(new Interrupted(s));
    Deno.addSignalListener(s, h);
    return [s, h] as const;
  });
  try {
    return await body(controller.signal);
  } catch (e) {
    throw controller.signal.aborted ? controller.signal.reason : e;
  } finally {
    for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  }
}

/** A UsageError when a run needs a WebGPU device (`what` needs it) and none can be opened. */
export async function requireDevice(needed: boolean, what: string): Promise<void> {
  if (!needed) return;
  const why = await gpuUnavailable();
  if (why) throw new UsageError(`${what} needs a WebGPU device, and ${why}`);
}
