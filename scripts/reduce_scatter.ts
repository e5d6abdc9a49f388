/** `deno task reduce_scatter [flags]`: measures reduce_scatter over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("reduceScatter", Deno.args));
