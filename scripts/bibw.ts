/** `deno task bibw [flags]`: measures bibw over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("bibw", Deno.args));
