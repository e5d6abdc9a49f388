// Times the passes of a reproducible 2^20-float allreduce one by one on 2 shm ranks, beside the
// plain call (docs/results/2026-12-02-reproducible.md): deno run -A --v8-flags=--experimental-wasm-fp16 phases.ts
import { spawnRanks } from "../../../mod.ts";

const module = new URL("./phases_rank.ts", import.meta.url);
console.log((await spawnRanks(module, { size: 2, transport: "shm", args: 1 << 20 }))[0]);
