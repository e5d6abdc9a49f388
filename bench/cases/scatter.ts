/**
 * scatter: block r of the root's whole buffer in rank r's (in place: the root's own block).
 * @module
 */

import { rootedBlocks } from "./_rooted_blocks.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** scatter's case. */
export const SCATTER: PrimitiveSpec = rootedBlocks(false);
