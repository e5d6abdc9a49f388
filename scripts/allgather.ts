/** `deno task allgather [flags]`: measures allgather over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("allgather", Deno.args));
