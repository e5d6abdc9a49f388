/** `deno task mbw_mr [flags]`: measures mbw_mr over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("mbwMr", Deno.args));
