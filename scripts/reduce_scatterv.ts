/** `deno task reduce_scatterv [flags]`: measures reduce_scatterv over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("reduceScatterv", Deno.args));
