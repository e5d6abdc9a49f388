/** `deno task gatherv [flags]`: measures gatherv over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("gatherv", Deno.args));
