/** `deno task ialltoall [flags]`: measures how much of alltoall hides behind computation (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("ialltoall", Deno.args));
