/** `deno task iallreduce [flags]`: measures how much of allreduce hides behind computation (see `--help`). @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("iallreduce", Deno.args));
