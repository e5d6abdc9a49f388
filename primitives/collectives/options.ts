/**
 * The options of the Communicator's calls.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { Dtype, MemoryKind, ReduceOp } from "../types.ts";

/** Options of {@linkcode Communicator.alloc}. */
export interface AllocOptions {
  /** Element type. @default {"f32"} */
  dtype?: Dtype;
  /** Memory kind: `shared` lives in the rank's heap, `host` in a private ArrayBuffer. @default {"shared"} */
  memory?: MemoryKind;
}

/** Options of collectives that pick an algorithm. */
export interface AlgorithmOptions {
  /** An algorithm name from the registry, or `auto`. @default {"auto"} */
  algorithm?: string;
}

/** Options of reductions. */
export interface ReduceOptions extends AlgorithmOptions {
  /** Reduce operator. @default {"sum"} */
  op?: ReduceOp;
  /** Out-of-place result buffer; when absent the input buffer is overwritten. */
  out?: BufferLike;
  /**
   * Sums (`sum`, `avg`) whose bits depend only on the terms, not on the algorithm, transport,
   * rank order or rank count (docs/dtypes.md, "Reproducible sums"). An allreduce's `buf` may then
   * hold several terms of `out`'s length one after another: this rank's share of the terms.
   * @default {false}
   */
  reproducible?: boolean;
}

/** Options of rooted collectives. */
export interface RootOptions {
  /** Root rank. @default {0} */
  root?: number;
}

/** Options of point-to-point calls. */
export interface TagOptions {
  /** Message tag, 0 ≤ tag < 2^30. @default {0} */
  tag?: number;
}
