/** `deno task sendrecv [flags]`: measures sendrecv over a size sweep (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("sendrecv", Deno.args));
