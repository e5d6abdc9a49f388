// Worker program of shm_probe.ts's 1-float ceiling: one side hands a float to the other through a
// ring of 64-byte slots in a SharedArrayBuffer (the shape of `shm`'s pipelined bcast, without
// the library), with one `await` per call as a caller of the library pays.

import { timeBatches } from "./shm_probe_rank.ts";

/** Int32 words per slot (one 64-byte line): the call number, then the float. */
const SLOT_WORDS = 16;
/** Word the reader publishes the last call it has read in, every 8 calls (a line of its own). */
const READ_UP_TO = 0;
const DONE = Promise.resolve();

export interface HandoffArgs {
  /** A line for READ_UP_TO, then `slots` lines; `slots` is a power of two. */
  buffer: SharedArrayBuffer;
  slots: number;
  writer: boolean;
  /** Calls per timed batch, and batches. */
  calls: number;
  batches: number;
}

const scope = self as unknown as {
  onmessage: (e: MessageEvent<HandoffArgs>) => void;
  postMessage(msg: [number, number]): void;
};

scope.onmessage = async (e) => {
  const { buffer, slots, writer, calls, batches } = e.data;
  const words = new Int32Array(buffer), floats = new Float32Array(buffer);
  let seq = 0;
  // Plain stores publish on x86-64 (TSO), as `shm`'s do there (membarrier.ts).
  const call = (): Promise<void> => {
    seq++;
    const at = (1 + (seq & (slots - 1))) * SLOT_WORDS;
    if (writer) {
      while (((seq - slots - Atomics.load(words, READ_UP_TO)) | 0) > 0) { /* spin */ }
      floats[at + 1] = seq;
      words[at] = seq;
    } else {
      while (((Atomics.load(words, at) - seq) | 0) < 0) { /* spin */ }
      if (floats[at + 1] !== Math.fround(seq)) throw new Error(`handoff ${seq} read a wrong float`);
      if ((seq & 7) === 0) words[READ_UP_TO] = seq;
    }
    return DONE;
  };
  for (let i = 0; i < 10 * calls; i++) await call();
  // µs per call: the mean over every batch, and the fastest batch's.
  scope.postMessage(await timeBatches(batches, calls, call));
};
