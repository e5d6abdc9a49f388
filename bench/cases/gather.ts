/**
 * gather: every rank's block in the root's whole buffer (in place: the root's own block).
 * @module
 */

import { rootedBlocks } from "./_rooted_blocks.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** gather's case. */
export const GATHER: PrimitiveSpec = rootedBlocks(true);
