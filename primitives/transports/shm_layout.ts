/**
 * Memory layout shared by the `shm` transport and its launcher: a control block of Int32 words and
 * one single-producer/single-consumer ring of slots per ordered pair of ranks.
 * @module
 */

/** Pipeline slots per rank: a writer runs at most this many pipelined calls ahead of a reader. */
export const PIPE_SLOTS = 64;
/**
 * Word offsets inside one pipeline slot header, a 64-byte line of its own: a writer running ahead
 * fills the next slot while a reader still reads this one, and shared lines would bounce.
 */
export const PIPE_WORD = {
  /** The pipelined call (a per-group count) whose data the slot holds; published last. */
  SEQ: 0,
  /** The call's stamp as two words (`storeStamp`). */
  STAMP: 1,
  /** Small calls' data: {@linkcode PIPE_WORD.INLINE_BYTES} from this word (16-byte aligned). */
  INLINE: 4,
  INLINE_BYTES: 48,
  WORDS: 16,
} as const;

/** Control words (Int32 indices). */
export const CTRL = {
  /** 0, or 1 + the rank whose failure aborts everyone. Set after the reason is written. */
  ABORT: 0,
  /** Taken (0 → 1) by whoever aborts first; only that one writes the reason. */
  ABORT_CLAIM: 1,
  /** Bytes of the UTF-8 abort reason stored from {@linkcode CTRL.ABORT_REASON} on. */
  ABORT_REASON_BYTES: 2,
  /** 1 + the rank that raised the abort, or 0 for the launcher. */
  ABORT_BY: 3,
  /** First word of the abort reason text. */
  ABORT_REASON: 4,
  /**
   * Each rank owns four 64-byte lines from here on: a sleep line written only around sleeps and
   * by calls on large buffers, an arrival line written on every collective (with a small eager
   * exchange's data), a line of pipelined calls finished, and a line of the pipelined call in
   * progress; then the headers of its pipeline slots. Keeping them apart means polling peers and
   * checking whether they sleep never pulls a freshly written line across cores.
   */
  RANK_BASE: 64,
  RANK_WORDS: 64 + PIPE_SLOTS * PIPE_WORD.WORDS,
} as const;

/** Longest abort reason kept, bytes. */
const ABORT_REASON_MAX = (CTRL.RANK_BASE - CTRL.ABORT_REASON) * 4;

/** Word offsets inside a rank's lines. */
export const RANK_WORD = {
  /** Futex word: bumped by anyone who may have unblocked this rank while it sleeps. */
  DOORBELL: 0,
  /** 1 while the rank sleeps in Atomics.wait, so that others notify only when needed. */
  SLEEPING: 1,
  /**
   * Two parities each of: byte offset, count, dtype code of an exchanged view (in the sleep
   * line, like the words below: written only by calls on large buffers, or once).
   */
  VIEW_DESC: 2,
  /** Byte offset of this rank's eager slots in its heap. */
  EAGER_OFFSET: 8,
  /**
   * 1 once this rank has closed (0 while open), published after its goodbye: its collective
   * calls + 1, their digest and its last call's stamp (two words; closing_check.ts).
   */
  CLOSED: 9,
  CLOSED_CALLS: 10,
  CLOSED_DIGEST: 11,
  CLOSED_LAST: 12,
  /** 1 + the CPU this rank ran on when it last began to wait (0: unknown). */
  CPU: 14,
  /** Arrivals (barriers, eager and view exchanges) this rank has made. */
  ARRIVE_SEQ: 16,
  /** Two parities each of: the arrival's call stamp as two words (`storeStamp`). */
  STAMP: 17,
  /** Two parities each of: the digest of the pipelined calls since the previous arrival. */
  DIGEST: 21,
  /**
   * Two parities each of: an eager exchange's data when it fits in
   * {@linkcode EAGER_INLINE_BYTES} (16-byte aligned), so a peer that sees the arrival has its
   * data in the same line.
   */
  EAGER_INLINE: 24,
  /**
   * The last pipelined call this rank has finished (a line of its own: written every few
   * pipelined calls, read by a writer that runs out of slots, which may poll it while this rank
   * writes its current call).
   */
  PIPE_DONE: 32,
  /**
   * The pipelined call this rank is in, and two parities each of its stamp (two words): peers
   * waiting on this rank's slot read them to tell a slow writer from one in another call.
   */
  PIPE_CURRENT: 48,
  PIPE_CURRENT_STAMP: 49,
  /** The first pipeline slot header: {@linkcode PIPE_SLOTS} of {@linkcode PIPE_WORD}. */
  PIPE: 64,
} as const;

/** Bytes of an eager exchange kept in the arrival line, per parity. */
export const EAGER_INLINE_BYTES = 16;

/** Slots per ring. */
export const SLOTS = 8;
/** Payload bytes per slot up to 16 ranks; 128 KiB keeps a slot in L2 while it is copied. */
const MAX_SLOT_BYTES = 128 * 1024;
/** Smallest slot, for groups so large that full slots would not fit in memory. */
const MIN_SLOT_BYTES = 4 * 1024;
/** Rings of a group share this many bytes at most, unless slots are already the smallest. */
const RINGS_BUDGET_BYTES = 256 * 1024 * 1024;
/** Bytes before the slot payloads: head, tail and slot headers. */
const RING_HEADER = 1024;
/**
 * Int32 index of `head` (slots written), `tail` (slots consumed), `taken` (messages a receive
 * took, for the sender's goodbye check) and `copied` (direct messages the receiver has copied out
 * of the sender's heap, shm_rings.ts) inside a ring.
 */
export const RING_HEAD = 0,
  RING_TAIL = 16,
  RING_TAKEN = 24,
  RING_COPIED = 28,
  RING_SLOT_HEADERS = 32;
/** Int32 words per slot header: tag, total, chunk, first-of-message, stamp (two words). */
export const SLOT_HEADER_WORDS = 8;

/**
 * Payload bytes per slot for `size` ranks: the largest power of two from 4 KiB to 128 KiB that
 * keeps the size² rings within 256 MiB (the rings are one shared WebAssembly memory).
 */
export function slotBytes(size: number): number {
  let bytes = MAX_SLOT_BYTES;
  while (bytes > MIN_SLOT_BYTES && size * size * SLOTS * bytes > RINGS_BUDGET_BYTES) bytes /= 2;
  return bytes;
}

/** Bytes of one ring of a `size`-rank group. */
export function ringBytes(size: number): number {
  return RING_HEADER + SLOTS * slotBytes(size);
}

/** Bytes of the control block for `size` ranks. */
export function controlBytes(size: number): number {
  return (CTRL.RANK_BASE + size * CTRL.RANK_WORDS) * 4;
}

/** Byte offset of the ring carrying messages from `src` to `dst`. */
export function ringOffset(size: number, src: number, dst: number): number {
  return (src * size + dst) * ringBytes(size);
}

/** Byte offset of the first slot payload inside a ring. */
export function slotDataOffset(size: number, slot: number): number {
  return RING_HEADER + slot * slotBytes(size);
}

/** Memory the launcher allocates for a `size`-rank `shm` group, bytes. */
export function shmSetupBytes(size: number): number {
  return controlBytes(size) + size * size * ringBytes(size);
}

/**
 * Shared state the launcher creates and hands to every `shm` rank. The rings are a shared
 * WebAssembly memory, so that copies into and out of their slots run `memory.copy`
 * (kernels/copy.ts).
 */
export interface ShmSetup {
  control: SharedArrayBuffer;
  rings: WebAssembly.Memory;
}

/** Allocates the control block and rings for `size` ranks. */
export function createShmSetup(size: number): ShmSetup {
  const pages = Math.max(1, Math.ceil(size * size * ringBytes(size) / 65536));
  return {
    control: new SharedArrayBuffer(controlBytes(size)),
    rings: new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }),
  };
}

/**
 * Stamps are safe integers (primitives/communicator/stamp.ts); Int32 words hold them in two parts: the high
 * word, and what is left below it.
 */
const STAMP_SPLIT = 2 ** 26;
/** Writes `stamp` into `words[at]` and `words[at + 1]` (plain stores). */
export function storeStamp(words: Int32Array, at: number, stamp: number): void {
  const high = Math.floor(stamp / STAMP_SPLIT);
  words[at] = high;
  words[at + 1] = stamp - high * STAMP_SPLIT;
}
/** The stamp held in `words[at]` and `words[at + 1]` (plain loads). */
export function loadStamp(words: Int32Array, at: number): number {
  return words[at] * STAMP_SPLIT + words[at + 1];
}

/**
 * Marks `failedRank` as failed for `reason` and wakes every rank (launchers and ranks alike). The
 * first abort wins; later ones change nothing.
 */
export function raiseAbort(
  control: SharedArrayBuffer,
  size: number,
  failedRank: number,
  reason: string,
  by?: number,
): void {
  const ctrl = new Int32Array(control);
  if (Atomics.compareExchange(ctrl, CTRL.ABORT_CLAIM, 0, 1) !== 0) return;
  const text = new TextEncoder().encode(reason).subarray(0, ABORT_REASON_MAX);
  new Uint8Array(control, CTRL.ABORT_REASON * 4, ABORT_REASON_MAX).set(text);
  ctrl[CTRL.ABORT_REASON_BYTES] = text.byteLength;
  ctrl[CTRL.ABORT_BY] = by === undefined ? 0 : by + 1;
  Atomics.store(ctrl, CTRL.ABORT, failedRank + 1); // publishes the reason written above
  for (let r = 0; r < size; r++) {
    const bell = CTRL.RANK_BASE + r * CTRL.RANK_WORDS + RANK_WORD.DOORBELL;
    Atomics.add(ctrl, bell, 1);
    Atomics.notify(ctrl, bell);
  }
}

/** The abort raised in `control`, if any: the failed rank, the reason, and who raised it. */
export function readAbort(
  control: SharedArrayBuffer,
): { failedRank: number; reason: string; by?: number } | undefined {
  const ctrl = new Int32Array(control);
  const flag = Atomics.load(ctrl, CTRL.ABORT);
  if (flag === 0) return undefined;
  const bytes = new Uint8Array(control, CTRL.ABORT_REASON * 4, ctrl[CTRL.ABORT_REASON_BYTES]);
  const by = ctrl[CTRL.ABORT_BY] === 0 ? undefined : ctrl[CTRL.ABORT_BY] - 1;
  return { failedRank: flag - 1, reason: new TextDecoder().decode(bytes.slice()), by };
}
