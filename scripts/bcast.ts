/** `deno task bcast [flags]`: measures bcast over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("bcast", Deno.args));
