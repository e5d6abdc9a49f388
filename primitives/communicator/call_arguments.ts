/**
 * The checks of a communicator's arguments that every collective's spec (collectives/spec.ts)
 * and the point-to-point calls share: each wrong argument is a one-line TypeError or RangeError
 * that says what was wrong and what is accepted, thrown before anything is sent.
 * @module
 */

import { MAX_TAG } from "./call_log.ts";
import { isReproducible, planOf } from "../../kernels/reproducible.ts";
import { type ArgumentChecks, IN_PLACE, type InPlaceForm } from "../collectives/spec.ts";
import { CommBuffer, HostBuffer, ownerOf } from "../memory/comm_buffer.ts";
import type { BufferLike } from "../memory/comm_buffer.ts";
import type { RankMemory } from "../memory/rank_memory.ts";
import { overlaps, sameBytes } from "../memory/extent.ts";
import { sideOfMemory, type TransportFacts } from "../transports/transport.ts";
import {
  type Dtype,
  DTYPE_INFO,
  DTYPES,
  MAX_BYTES,
  MEMORY_KINDS,
  type MemoryKind,
  REDUCE_OPS,
  type ReduceOp,
  type Side,
} from "../types.ts";

/**
 * One communicator's argument checks: the ones every collective's spec uses (`ArgumentChecks`)
 * and those of allocations and point-to-point calls.
 */
export class CallArguments implements ArgumentChecks {
  readonly rank: number;
  readonly size: number;
  readonly #memory: RankMemory;
  readonly #facts: TransportFacts;
  /** The transport's name, for messages. */
  readonly #transport: string;
  readonly #carried: readonly MemoryKind[];

  /** Checks for rank `rank` of `size` with `memory`, over a transport with `facts`. */
  constructor(rank: number, size: number, memory: RankMemory, facts: TransportFacts) {
    this.rank = rank;
    this.size = size;
    this.#memory = memory;
    this.#facts = facts;
    this.#transport = facts.name;
    this.#carried = facts.memory;
  }

  /** A checked allocation's dtype and memory kind. */
  alloc(count: number, dtype: Dtype, memory: MemoryKind): void {
    if (!DTYPES.includes(dtype)) {
      throw new TypeError(`Unknown dtype ${dtype}: expected one of ${DTYPES.join(", ")}`);
    }
    if (!MEMORY_KINDS.includes(memory)) {
      throw new TypeError(
        `Unknown memory kind ${memory}: expected one of ${MEMORY_KINDS.join(", ")}`,
      );
    }
    checkCount(count, dtype, "allocate");
    if (!this.#carried.includes(memory)) {
      throw new TypeError(
        `Cannot allocate ${memory} memory on transport ${this.#transport}: it carries ` +
          `${this.#carried.join(", ")}`,
      );
    }
  }

  /** `buf` as a buffer this rank may use in a call that does `what`. */
  buffer(buf: BufferLike, what: string): CommBuffer {
    const cb = commBufferOf(buf, what);
    const owner = ownerOf(cb);
    if (owner !== undefined && owner !== this.#memory) {
      const theirs = owner.rank === this.rank
        ? "another communicator of this rank"
        : `rank ${owner.rank}`;
      throw new TypeError(
        `Rank ${this.rank} cannot ${what} a buffer allocated by ${theirs}: a buffer belongs to ` +
          `the communicator that allocated it`,
      );
    }
    checkCount(cb.length, cb.dtype, "use");
    if (!this.#carried.includes(cb.memory)) {
      throw new TypeError(
        `Transport ${this.#transport} cannot carry ${cb.memory} memory: it carries ` +
          `${this.#carried.join(", ")}`,
      );
    }
    return cb;
  }

  /** The checked `out` buffer for `input`, or `input` itself when there is none. */
  output(input: CommBuffer, out: BufferLike | undefined, what: string): CommBuffer {
    if (out === undefined) return input;
    const output = this.buffer(out, `${what} into`);
    this.pair(input, output, output.length === input.length, what, "out = input length");
    this.apart(output, input, what, 0, IN_PLACE.out);
    return output;
  }

  /**
   * Operands `a` and `b` of a call that does `what`: apart, or, where the call has an in-place
   * `form`, `a` exactly block `block` of `b` (from element `at`: blocks of `a`'s length unless the
   * call has per-rank counts). Any other sharing of bytes
   * is refused: the algorithms would read what they had already overwritten. Nothing is made
   * unless the two share bytes (every call checks).
   */
  apart(
    a: CommBuffer,
    b: CommBuffer,
    what: string,
    block = 0,
    form?: InPlaceForm,
    at = block * a.length,
  ): void {
    if (!overlaps(a, b)) return;
    if (form && sameBytes(a, b.subarray(at, at + a.length))) return;
    const inPlace = form?.whose === undefined
      ? form && `${form.a} is ${form.b} itself`
      : `${form.a} is block ${block} (${form.whose}) of ${form.b}`;
    throw new RangeError(
      `Cannot ${what} between buffers that share memory: ` +
        (inPlace ? `in place ${inPlace}; ` : `${what} has no in-place form; `) +
        "otherwise the buffers must not overlap",
    );
  }

  /** Two buffers of one call: the same dtype, and lengths that are `ok` by `rule`. */
  pair(a: CommBuffer, b: CommBuffer, ok: boolean, what: string, rule: string): void {
    if (a.dtype !== b.dtype) {
      throw new TypeError(`Cannot ${what} ${a.dtype} into ${b.dtype}: dtypes must match`);
    }
    if (!ok) {
      throw new RangeError(
        `Cannot ${what} ${a.length} into ${b.length} elements on ${this.size} ranks: need ${rule}`,
      );
    }
  }

  /** The side every buffer of a call is used on; they must agree. */
  side(first: CommBuffer, ...rest: CommBuffer[]): Side {
    const side = sideOfMemory(this.#facts, first.memory);
    for (const b of rest) {
      if (sideOfMemory(this.#facts, b.memory) !== side) {
        throw new TypeError(
          `Cannot mix ${first.memory} and ${b.memory} memory in one call on transport ` +
            `${this.#transport}: one is used on the device, the other on the host`,
        );
      }
    }
    return side;
  }

  root(root: number, verb: string): number {
    if (!Number.isInteger(root) || root < 0 || root >= this.size) {
      throw new RangeError(`Cannot ${verb} root ${root}: communicator size is ${this.size}`);
    }
    return root;
  }

  peer(peer: number, verb: string): number {
    if (this.size === 1) {
      throw new RangeError(
        `Cannot ${verb} rank ${peer}: this rank is the only one (a group of 1 has no peers)`,
      );
    }
    if (!Number.isInteger(peer) || peer < 0 || peer >= this.size || peer === this.rank) {
      throw new RangeError(
        `Cannot ${verb} rank ${peer}: peers are 0 … ${this.size - 1} other than ${this.rank}`,
      );
    }
    return peer;
  }

  tag(tag: number): number {
    if (!Number.isInteger(tag) || tag < 0 || tag >= MAX_TAG) {
      throw new RangeError(`Invalid tag ${tag}: tags are integers 0 … ${MAX_TAG - 1}`);
    }
    return tag;
  }

  op(op: ReduceOp): ReduceOp {
    if (!REDUCE_OPS.includes(op)) {
      throw new TypeError(`Unknown reduce op ${op}: expected one of ${REDUCE_OPS.join(", ")}`);
    }
    return op;
  }

  reproducible(
    asked: boolean | undefined,
    op: ReduceOp,
    buffer: CommBuffer,
    count: number,
  ): boolean {
    if (asked === undefined || asked === false) return false;
    if (asked !== true) {
      throw new TypeError(`reproducible must be true or false, not ${String(asked)}`);
    }
    if (op === "prod") {
      throw new RangeError(
        "Cannot multiply reproducibly: reproducible takes sum and avg (max and min are exact)",
      );
    }
    // Exact anyway: the plain call is reproducible.
    if (op === "max" || op === "min" || !isReproducible(buffer.dtype) || count === 0) return false;
    const most = MAX_BYTES / (8 * planOf(buffer.dtype, count).width);
    if (count > most) {
      throw new RangeError(
        `Cannot sum ${count} × ${buffer.dtype} reproducibly: at most ${most} elements ` +
          `(their accumulators are 2^30 bytes)`,
      );
    }
    return true;
  }
}

/**
 * The CommBuffer of a buffer-like argument of a call that does `what`; a one-line TypeError for
 * anything else, and for a typed array whose memory was transferred away.
 */
function commBufferOf(buf: BufferLike, what: string): CommBuffer {
  let cb: CommBuffer;
  if (buf instanceof CommBuffer) cb = buf;
  else if (ArrayBuffer.isView(buf)) cb = new HostBuffer(buf);
  else {
    const got = buf === null
      ? "null"
      : typeof buf === "object"
      ? withArticle((buf as object).constructor?.name ?? "plain object")
      : typeof buf;
    throw new TypeError(
      `Cannot ${what} ${got}: expected a CommBuffer (comm.alloc) or a Float32Array, ` +
        `Float64Array, Int32Array, Float16Array or Uint16Array (bf16)`,
    );
  }
  if (cb instanceof HostBuffer && (cb.view.buffer as ArrayBuffer).detached) {
    throw new TypeError(
      `Cannot ${what} a buffer whose memory was transferred (its ArrayBuffer is detached)`,
    );
  }
  return cb;
}

/** `an Array`, `a Map`: a type's name as a sentence says it. */
function withArticle(name: string): string {
  return `${/^[aeiou]/i.test(name) ? "an" : "a"} ${name}`;
}

function checkCount(count: number, dtype: Dtype, verb: string): void {
  const limit = MAX_BYTES / DTYPE_INFO[dtype].bytes;
  if (!Number.isInteger(count) || count < 0 || count > limit) {
    throw new RangeError(`Cannot ${verb} ${count} × ${dtype}: counts are integers 0 … ${limit}`);
  }
}
