/** `deno task reduce [flags]`: measures reduce over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("reduce", Deno.args));
