/**
 * gatherv: every rank's block in the root's whole buffer, equal counts (osu_gatherv).
 * @module
 */

import { rootedBlocks } from "./_rooted_blocks.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** gatherv's case. */
export const GATHERV: PrimitiveSpec = rootedBlocks(true, true);
