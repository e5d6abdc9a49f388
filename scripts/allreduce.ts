/** `deno task allreduce [flags]`: measures allreduce over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("allreduce", Deno.args));
