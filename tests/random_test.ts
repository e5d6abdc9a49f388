// Random (non-integer) data: every algorithm stays within f32 rounding of the f64 sum, and all
// ranks end with bit-identical results.
import { algorithmsFor } from "../primitives/auto.ts";
import { TRANSPORT_TABLE, TRANSPORTS } from "../deno/transport_table.ts";
import { assert_, assertEquals } from "./_assert.ts";
import { runRanks } from "./_spawn_ranks.ts";

for (const transport of TRANSPORT_TABLE.launching("workers")) {
  Deno.test(`allreduce of random floats is within tolerance: ${transport}, 4 ranks`, async () => {
    for (const algorithm of algorithmsFor("allreduce", { transport: TRANSPORTS[transport] })) {
      const count = 50_001;
      const results = await runRanks<{ input: Float64Array; output: number[] }>("random_rank.ts", {
        size: 4,
        transport,
        args: { count, algorithm, seed: 7 },
      });
      for (let i = 0; i < count; i++) {
        const exact = results.reduce((s, r) => s + r.input[i], 0);
        const got = results[0].output[i];
        assert_(
          Math.abs(got - exact) <= 4e-7 * 4 * 2000 + 1e-3,
          `${algorithm}[${i}]: ${got} vs ${exact}`,
        );
      }
      for (const r of results) {
        assertEquals(r.output, results[0].output, `${algorithm}: ranks differ`);
      }
    }
  });
}
