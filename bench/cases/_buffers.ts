/**
 * What the cases of this folder share: their buffers (allocated once for the largest size, a
 * size's case on the first elements), `--touch`'s migrations, copies through host memory, and the
 * shape of the collectives between a block per rank and `size` blocks.
 * @module
 */

import { type CommBuffer, type Communicator, ManagedBuffer } from "../../core.ts";
import { type CollectiveName, COLLECTIVES, DTYPE_INFO } from "../../internal.ts";
import { wrongInputs } from "../exact_inputs.ts";
import type { CaseOptions, PreparedCase, PrimitiveSpec, SizedCase } from "./spec.ts";

/** A collective's facts as its case restates none of them: its name, root and op. */
export function collectiveFacts<C extends CollectiveName>(
  collective: C,
): { name: C; collective: C; rooted: boolean; reduces: boolean } {
  const { rooted, reduces } = COLLECTIVES[collective];
  return { name: collective, collective, rooted, reduces };
}

export function alloc(comm: Communicator, count: number, o: CaseOptions): CommBuffer {
  return comm.alloc(count, { dtype: o.dtype, memory: o.memory });
}

/** The first `count` elements of `buf`. */
export function head(buf: CommBuffer, count: number): CommBuffer {
  return buf.subarray(0, count);
}

/** Copies `src` into `dst` (same length and dtype) through host memory. */
export async function copy(src: CommBuffer, dst: CommBuffer): Promise<void> {
  const through = new DTYPE_INFO[src.dtype].array(src.length);
  await src.read(through);
  await dst.write(through);
}

/**
 * A prepared case over `bufs`; each sized case gets a `touch` of the managed buffers it uses when
 * the options ask for one.
 */
export function prepared(
  comm: Communicator,
  o: CaseOptions,
  bufs: CommBuffer[],
  sized: (count: number, inPlace: boolean) => SizedCase & { buffers: CommBuffer[] },
): PreparedCase {
  return {
    sized(count, inPlace = false) {
      const { buffers, ...c } = sized(count, inPlace);
      const side = o.touch;
      const managed = buffers.filter((b): b is ManagedBuffer => b instanceof ManagedBuffer);
      if (side && managed.length > 0) {
        c.touch = async () => {
          for (const b of managed) await b.touch(side);
        };
      }
      return c;
    },
    free: () => bufs.forEach((b) => comm.free(b)),
  };
}

export const whole = (count: number) => count;

/** `size` counts of `n` each: the v collectives' equal blocks (made once per size, not per op). */
export function equalCounts(n: number, size: number): number[] {
  return new Array(size).fill(n);
}
export const multipleOfRanks = (count: number, ranks: number) => count - (count % ranks);

/** What the collectives between a block per rank and `size` blocks share (nccl-tests' factor). */
export const BETWEEN_BLOCKS: Pick<PrimitiveSpec, "busFactor" | "busFormula" | "footprint" | "fit"> =
  {
    busFactor: (n) => (n - 1) / n,
    busFormula: "(n-1)/n",
    footprint: (count, ranks) => count + count / ranks,
    fit: multipleOfRanks,
  };

/**
 * The buffers of a collective between a block per rank and `size` blocks: `send` is the block and
 * `recv` the whole (allgather, gather), or the other way round (reduce-scatter, scatter). In
 * place, the block is block `inPlaceBlock` of the whole (this rank's, or the root's on the root;
 * undefined: this rank keeps a block of its own).
 */
export function blockCase(
  comm: Communicator,
  maxCount: number,
  o: CaseOptions,
  blockSends: boolean,
  inPlaceBlock: number | undefined,
  sized: (n: number, send: CommBuffer, recv: CommBuffer) => SizedCase & { buffers: CommBuffer[] },
): PreparedCase {
  const size = comm.size, blockMax = Math.floor(maxCount / size);
  const sendBuf = alloc(comm, blockSends ? blockMax : maxCount, o);
  const recvBuf = alloc(comm, blockSends ? maxCount : blockMax, o);
  return prepared(comm, o, [sendBuf, recvBuf], (count, inPlace) => {
    const n = Math.floor(count / size);
    const whole = head(blockSends ? recvBuf : sendBuf, n * size);
    const block = inPlace && inPlaceBlock !== undefined
      ? whole.subarray(inPlaceBlock * n, (inPlaceBlock + 1) * n)
      : head(blockSends ? sendBuf : recvBuf, n);
    return blockSends ? sized(n, block, whole) : sized(n, whole, block);
  });
}

/** Elements of `recv`'s blocks that differ from their sender's inputs (block r: `from(r)`). */
export async function wrongBlocks(
  recv: CommBuffer,
  n: number,
  size: number,
  o: CaseOptions,
  from: (r: number) => [rank: number, offset: number],
): Promise<number> {
  let wrong = 0;
  for (let r = 0; r < size; r++) {
    const [rank, offset] = from(r);
    wrong += await wrongInputs(recv.subarray(r * n, (r + 1) * n), o, rank, size, offset);
  }
  return wrong;
}
