/** `deno task gather [flags]`: measures gather over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("gather", Deno.args));
