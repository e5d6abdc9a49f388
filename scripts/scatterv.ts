/** `deno task scatterv [flags]`: measures scatterv over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("scatterv", Deno.args));
