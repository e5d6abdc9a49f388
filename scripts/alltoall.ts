/** `deno task alltoall [flags]`: measures alltoall over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("alltoall", Deno.args));
