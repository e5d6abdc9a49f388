/**
 * scatterv: block r of the root's whole buffer into rank r's, equal counts (osu_scatterv).
 * @module
 */

import { rootedBlocks } from "./_rooted_blocks.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** scatterv's case. */
export const SCATTERV: PrimitiveSpec = rootedBlocks(false, true);
