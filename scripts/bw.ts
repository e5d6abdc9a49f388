/** `deno task bw [flags]`: measures bw over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("bw", Deno.args));
