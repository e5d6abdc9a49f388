/** `deno task scatter [flags]`: measures scatter over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("scatter", Deno.args));
