/** `deno task ibcast [flags]`: measures how much of bcast hides behind computation (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("ibcast", Deno.args));
