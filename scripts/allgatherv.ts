/** `deno task allgatherv [flags]`: measures allgatherv over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("allgatherv", Deno.args));
