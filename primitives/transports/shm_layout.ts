/**
 * Memory layout shared by the `shm` transport and its launcher: a control block of Int32 words and
 * one single-producer/single-consumer ring of slots per ordered pair of ranks.
 * @module
 */

/** Control words (Int32 indices). */
export const CTRL = {
  /** 0, or 1 + the rank whose failure aborts everyone. */
  ABORT: 0,
  /**
   * Each rank owns two 64-byte lines from here on: a sleep line written only around sleeps, and an
   * arrival line written on every collective. Keeping them apart means polling peers and checking
   * whether they sleep never pulls a freshly written line across cores.
   */
  RANK_BASE: 16,
  RANK_WORDS: 32,
} as const;

/** Word offsets inside a rank's two lines. */
export const RANK_WORD = {
  /** Futex word: bumped by anyone who may have unblocked this rank while it sleeps. */
  DOORBELL: 0,
  /** 1 while the rank sleeps in Atomics.wait, so that others notify only when needed. */
  SLEEPING: 1,
  /** Barriers this rank has entered. */
  BARRIER_SEQ: 16,
  /** Eager exchanges this rank has entered. */
  EAGER_SEQ: 17,
  /** Two parities each of: count × 3 + dtype code. */
  EAGER_DESC: 18,
  /** Two parities each of: byte offset, count, dtype code. */
  VIEW_DESC: 20,
  /** Byte offset of this rank's eager slots in its heap. */
  EAGER_OFFSET: 26,
} as const;

/** Slots per ring. */
export const SLOTS = 8;
/** Payload bytes per slot; 128 KiB keeps a slot in L2 while it is copied in and out. */
export const SLOT_BYTES = 128 * 1024;
/** Bytes before the slot payloads: head, tail and slot headers (tag, total, chunk). */
const RING_HEADER = 1024;
/** Bytes of one ring. */
export const RING_BYTES = RING_HEADER + SLOTS * SLOT_BYTES;
/** Int32 index of `head` (slots written) and `tail` (slots consumed) inside a ring. */
export const RING_HEAD = 0, RING_TAIL = 16, RING_SLOT_HEADERS = 32;

/** Bytes of the control block for `size` ranks. */
export function controlBytes(size: number): number {
  return (CTRL.RANK_BASE + size * CTRL.RANK_WORDS) * 4;
}

/** Byte offset of the ring carrying messages from `src` to `dst`. */
export function ringOffset(size: number, src: number, dst: number): number {
  return (src * size + dst) * RING_BYTES;
}

/** Byte offset of the first slot payload inside a ring. */
export function slotDataOffset(slot: number): number {
  return RING_HEADER + slot * SLOT_BYTES;
}

/** Shared state the launcher creates and hands to every `shm` rank. */
export interface ShmSetup {
  control: SharedArrayBuffer;
  rings: SharedArrayBuffer;
}

/** Allocates the control block and rings for `size` ranks. */
export function createShmSetup(size: number): ShmSetup {
  return {
    control: new SharedArrayBuffer(controlBytes(size)),
    rings: new SharedArrayBuffer(Math.max(1, size * size * RING_BYTES)),
  };
}

/** Marks `failedRank` as failed and wakes every rank (used by launchers and ranks alike). */
export function raiseAbort(control: SharedArrayBuffer, size: number, failedRank: number): void {
  const ctrl = new Int32Array(control);
  Atomics.compareExchange(ctrl, CTRL.ABORT, 0, failedRank + 1);
  for (let r = 0; r < size; r++) {
    const bell = CTRL.RANK_BASE + r * CTRL.RANK_WORDS + RANK_WORD.DOORBELL;
    Atomics.add(ctrl, bell, 1);
    Atomics.notify(ctrl, bell);
  }
}
