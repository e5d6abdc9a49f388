/** `deno task latency [flags]`: measures latency over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("latency", Deno.args));
