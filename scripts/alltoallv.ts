/** `deno task alltoallv [flags]`: measures alltoallv over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("alltoallv", Deno.args));
