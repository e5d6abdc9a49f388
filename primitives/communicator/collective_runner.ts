/**
 * How a communicator runs a checked collective call: as the next in the order this rank issued
 * them (issue_order.ts), on a context of its own (a call that goes on after it returns keeps its
 * context until it finishes), on one rank without one. The last checked call of each
 * small-message collective is kept, so a loop of small collectives skips the checks. A call whose
 * buffers overlap those of a call in flight begins once that one has finished (in_flight.ts).
 * @module
 */

import { type CallLog, MAX_TAG } from "./call_log.ts";
import {
  CollectiveContext,
  type Completion,
  type HostAlgorithmPicker,
} from "../collectives/context.ts";
import { type Entry, type InFlight, type Use, usesOf } from "./in_flight.ts";
import { IssueOrder } from "./issue_order.ts";
import { type BufferLike, type CommBuffer, HostBuffer } from "../memory/comm_buffer.ts";
import type { RankHeap } from "../memory/heap.ts";
import { type OperandSide, operandsOf } from "./operands.ts";
import type { Transport } from "../transports/transport.ts";
import { DONE, type TypedArray } from "../types.ts";
import type { Keep } from "../collectives/spec.ts";

export type { Keep };

/**
 * A collective call planned for the runner: its stamp, its algorithm over its operands (input and
 * output, or a bcast's one buffer twice), and what it does on one rank and after the algorithm.
 * `B`: host views or device buffers.
 */
export interface PlannedCall<B> {
  stamp: number;
  /** Where its operands come from. */
  side: OperandSide<B>;
  /** Runs the algorithm on the operands (more than one rank). */
  run(ctx: CollectiveContext, a: B, b: B): Completion;
  /** What the call does on one rank instead (a reproducible sum may wait on its device). */
  alone?(a: B, b: B): Completion;
  /** After the algorithm, on this rank (avg's division). */
  after?(a: B, b: B): void;
}

/**
 * A kept call: a call with the same arguments (a loop of small collectives) skips the checks,
 * the algorithm choice and the stamp, about half of a 1-float call's JS time. Device and managed
 * buffers resolve per call and are never kept.
 */
interface KeptCall extends Keep {
  /** The buffers' lengths then (a view over a resizable buffer can change length). */
  length: number;
  recvLength: number;
  /** Copies of the counts and displacements (none: not a v call). */
  counts?: KeptCounts;
  call: PlannedCall<TypedArray>;
  ops: TypedArray[];
  uses: Use[];
}

/** What the runner asks of its communicator. */
export interface RunnerHooks {
  /** Throws if the communicator is closed or broken. */
  checkOpen(): void;
  /** Breaks the communicator with `e`; returns the error to throw. */
  broke(e: unknown): unknown;
}

/** Runs one communicator's collective calls. */
export class CollectiveRunner {
  readonly #transport: Transport;
  readonly #heap: RankHeap;
  readonly #calls: CallLog;
  readonly #size: number;
  /** Collectives that run on after their call returns finish before the next begins. */
  readonly #blocking: boolean;
  readonly #hooks: RunnerHooks;
  readonly #pickHost: HostAlgorithmPicker;
  readonly #inFlight: InFlight;
  #seq = 0;
  /**
   * The context the next call runs on. A call that goes on after it returns keeps its context
   * until it finishes, and this one is replaced (each call in flight has a context of its own).
   */
  #ctx: CollectiveContext;
  /** Contexts of calls that went on after they returned and have finished, for reuse. */
  #idle: CollectiveContext[] = [];
  /** The order collectives begin in. */
  #order = new IssueOrder((waiting) => this.#direct = !waiting && !this.#stopped);
  #stopped = false;
  /**
   * A kept call may begin at once: calls may begin and no collective waits to begin (one field,
   * read by every call of a loop of small collectives).
   */
  #direct = true;
  /** The last checked call of each small-message collective (see {@linkcode repeat}). */
  #kept: Partial<Record<Keep["kind"], KeptCall>> = {};

  /**
   * The runner of calls over `transport` with scratch in `heap`, recorded in `calls`; `pickHost`
   * is the registry's pick of host algorithms (what staging and hierarchies run inside);
   * `inFlight` the communicator's calls in flight (point-to-point ones too).
   */
  constructor(
    transport: Transport,
    { heap, calls, hooks, pickHost, inFlight }: {
      heap: RankHeap;
      calls: CallLog;
      hooks: RunnerHooks;
      pickHost: HostAlgorithmPicker;
      inFlight: InFlight;
    },
  ) {
    this.#transport = transport;
    this.#heap = heap;
    this.#calls = calls;
    this.#size = transport.size;
    this.#blocking = transport.blocking ?? transport.facts.blocking;
    this.#hooks = hooks;
    this.#pickHost = pickHost;
    this.#inFlight = inFlight;
    this.#ctx = this.#context();
  }

  /** A fresh context of this runner's calls. */
  #context(): CollectiveContext {
    return new CollectiveContext(this.#transport, this.#heap, this.#pickHost);
  }

  /** No call begins at once any more (the communicator closed or broke). */
  stop(): void {
    this.#stopped = true;
    this.#direct = false;
  }

  /**
   * Runs the kept call of `kind` again if this one repeats it: the same buffers (of the same
   * lengths), the same `out`, `op`, `root`, `algorithm` and `reproducible`, and the same counts
   * and displacements (by value: a caller may refill its arrays). Otherwise `undefined`.
   */
  repeat(
    kind: Keep["kind"],
    buf: BufferLike,
    o: Keep["options"] | undefined,
    recv?: BufferLike,
  ): Promise<void> | undefined {
    const r = this.#kept[kind];
    if (r === undefined || r.buf !== buf || r.length !== buf.length) return undefined;
    if (o === undefined) return undefined; // the checked call says what is missing
    if (r.recv !== recv || (recv !== undefined && r.recvLength !== recv.length)) return undefined;
    const k = r.options;
    if (
      k.out !== o.out || k.op !== o.op || k.root !== o.root || k.algorithm !== o.algorithm ||
      k.reproducible !== o.reproducible
    ) return undefined;
    if (r.counts && !sameCounts(r.counts, o)) return undefined;
    return this.#rerun(r);
  }

  /**
   * Runs a checked collective on host views as the next call in issue order, on the operands of
   * `buffers` (each with whether the call writes it); kept as `keep` says when every buffer is a
   * host buffer.
   */
  runOnHost(
    call: PlannedCall<TypedArray>,
    buffers: [CommBuffer, boolean][],
    keep?: Keep,
  ): Promise<void> {
    if (this.#size === 1 && !call.alone && !call.after) return DONE;
    const uses = usesOf(buffers);
    const wait = this.#inFlight.before(uses);
    const views: TypedArray[] = [];
    for (const [b] of buffers) {
      if (!(b instanceof HostBuffer)) {
        return this.#later(call, () => operandsOf(call.side, buffers), wait, uses);
      }
      views.push(b.view);
    }
    if (keep && this.#size > 1 && !call.after) {
      // The options as they are now: the caller may change its object later.
      const { out, op, root, algorithm, reproducible } = keep.options;
      this.#kept[keep.kind] = {
        ...keep,
        options: { out, op, root, algorithm, reproducible },
        length: keep.buf.length,
        recvLength: keep.recv?.length ?? 0,
        // Every collective with per-rank counts takes `recvCounts` or `sendCounts`.
        counts: keep.options.recvCounts !== undefined || keep.options.sendCounts !== undefined
          ? keptCounts(keep.options)
          : undefined,
        call,
        ops: views,
        uses,
      };
    }
    return this.#order.free() && !wait
      ? this.#now(call, views, uses)
      : this.#later(call, () => views, wait, uses);
  }

  /**
   * Runs a checked collective on device buffers as the next call in issue order, on the operands
   * of `buffers` (each with whether the call writes it).
   */
  runOnDevice<B>(call: PlannedCall<B>, buffers: [CommBuffer, boolean][]): Promise<void> {
    if (this.#size === 1 && !call.alone && !call.after) return DONE;
    const uses = usesOf(buffers);
    return this.#later(
      call,
      () => operandsOf(call.side, buffers),
      this.#inFlight.before(uses),
      uses,
    );
  }

  /**
   * Runs a kept call again: {@linkcode #now} without its one-rank and `after` cases, which kept
   * calls never have (every call of a loop of small collectives comes this way).
   */
  #rerun(r: KeptCall): Promise<void> {
    const wait = this.#inFlight.before(r.uses);
    if (!this.#direct || wait) return this.#later(r.call, () => r.ops, wait, r.uses);
    try {
      const ctx = this.#begin(r.call.stamp);
      const pending = r.call.run(ctx, r.ops[0], r.ops[1]);
      if (!pending) return DONE;
      const done = this.#finishing(pending, ctx, this.#inFlight.enter(r.uses));
      if (this.#blocking) this.#order.holdUntil(done);
      return done;
    } catch (e) {
      return Promise.reject(this.#hooks.broke(e));
    }
  }

  /**
   * Begins `call` now, on a context of its own: not `async`, so a call that completes at once
   * allocates no promise. On a blocking transport, the next collective waits for it to finish.
   */
  #now<B>(call: PlannedCall<B>, ops: B[], uses: Use[]): Promise<void> {
    const done = this.#start(call, ops, uses);
    if (this.#blocking && done !== DONE) this.#order.holdUntil(done);
    return done;
  }

  /**
   * Begins `call` on `uses` once the collectives issued before it have begun, and what it waits
   * for (`wait`: in_flight.ts) has (see {@linkcode #now}); in flight from now on.
   */
  async #later<B>(
    call: PlannedCall<B>,
    operands: () => B[] | Promise<B[]>,
    wait: Promise<void> | undefined,
    uses: Use[],
  ): Promise<void> {
    const entry = this.#inFlight.enter(uses);
    const turn = this.#order.claim();
    const begun = wait && this.#inFlight.park();
    let done: Promise<void>;
    try {
      await turn.ready;
      if (wait) await wait;
      this.#hooks.checkOpen();
      done = this.#start(call, await operands(), uses, entry);
    } catch (e) {
      this.#inFlight.leave(entry);
      turn.release();
      throw this.#hooks.broke(e);
    } finally {
      begun?.();
    }
    if (this.#blocking) done.then(turn.release, turn.release);
    else turn.release();
    return done;
  }

  /**
   * Runs `call` on `ops` (`uses`) now: on one rank without a context, else on a context of its
   * own; in flight until it finishes (as `entry`, when it entered as it was issued).
   */
  #start<B>(call: PlannedCall<B>, ops: B[], uses: Use[], entry?: Entry): Promise<void> {
    const a = ops[0], b = ops[1];
    try {
      if (this.#size === 1) {
        const solo = call.alone?.(a, b);
        if (solo) {
          const leave = () => this.#inFlight.leave(entry);
          return solo.then(() => call.after?.(a, b)).finally(leave);
        }
        call.after?.(a, b);
        this.#inFlight.leave(entry);
        return DONE;
      }
      const ctx = this.#begin(call.stamp);
      const pending = call.run(ctx, a, b);
      if (!pending) {
        call.after?.(a, b);
        this.#inFlight.leave(entry);
        return DONE;
      }
      const after = call.after && (() => call.after!(a, b));
      return this.#finishing(pending, ctx, entry ?? this.#inFlight.enter(uses), after);
    } catch (e) {
      this.#inFlight.leave(entry);
      return Promise.reject(this.#hooks.broke(e));
    }
  }

  /**
   * A call's algorithm still `pending` on `ctx`, which it keeps until it finishes (the next call
   * gets another); then it leaves the calls in flight (`entry`) and runs `after`, or the
   * communicator breaks.
   */
  #finishing(
    pending: Promise<void>,
    ctx: CollectiveContext,
    entry: Entry,
    after?: () => void,
  ): Promise<void> {
    this.#ctx = this.#idle.pop() ?? this.#context();
    const seq = this.#seq;
    return pending.then(() => {
      // No call began meanwhile (calls one at a time): this context, whose scratch is warm,
      // serves the next call again.
      if (this.#seq === seq) [this.#ctx, ctx] = [ctx, this.#ctx];
      this.#idle.push(ctx);
      try {
        after?.();
      } finally {
        this.#inFlight.leave(entry);
      }
    }, (e) => {
      this.#inFlight.leave(entry);
      throw this.#hooks.broke(e);
    });
  }

  /**
   * Begins one collective call on more than one rank: a context with the next tag and the call's
   * stamp (judging peers' data that arrived early).
   */
  #begin(stamp: number): CollectiveContext {
    const ctx = this.#ctx;
    ctx.tag = MAX_TAG + (this.#seq++ % MAX_TAG);
    ctx.stamp = stamp;
    this.#calls.begin(ctx.tag, stamp);
    return ctx;
  }
}

/** A v call's counts and displacements, copied. */
interface KeptCounts {
  sendCounts?: number[];
  sendDispls?: number[];
  recvCounts?: number[];
  recvDispls?: number[];
}

/** Copies of `o`'s counts and displacements. */
function keptCounts(o: Keep["options"]): KeptCounts {
  const copied = (c: ArrayLike<number> | undefined) => c && Array.from(c);
  return {
    sendCounts: copied(o.sendCounts),
    sendDispls: copied(o.sendDispls),
    recvCounts: copied(o.recvCounts),
    recvDispls: copied(o.recvDispls),
  };
}

/**
 * Whether `o`'s counts and displacements hold the values `kept` copied (each field read by name:
 * a keyed read is megamorphic, and this runs on every kept call).
 */
function sameCounts(kept: KeptCounts, o: Keep["options"]): boolean {
  return sameList(kept.sendCounts, o.sendCounts) && sameList(kept.sendDispls, o.sendDispls) &&
    sameList(kept.recvCounts, o.recvCounts) && sameList(kept.recvDispls, o.recvDispls);
}

/** Whether `now` holds `was`'s values (or both are absent). */
function sameList(was: number[] | undefined, now: ArrayLike<number> | undefined): boolean {
  if (was === undefined || now === undefined) return was === now;
  if (now.length !== was.length) return false;
  for (let i = 0; i < was.length; i++) if (now[i] !== was[i]) return false;
  return true;
}
