// Call stamps carry every field of every call exactly, up to the largest count and root.
import { callStamp, shapeOf } from "../primitives/communicator/stamp.ts";
import { DTYPES, REDUCE_OPS } from "../primitives/types.ts";
import { assert_, assertEquals } from "./_assert.ts";

Deno.test("a stamp unpacks to the call it packed, for every dtype and op at the largest count", () => {
  for (const dtype of DTYPES) {
    for (const op of REDUCE_OPS) {
      for (const count of [0, 1, 1001, 2 ** 29]) {
        const stamp = callStamp("scatter", dtype, count, op, 1023, 15);
        assert_(Number.isSafeInteger(stamp), `${dtype} ${op} ${count}: ${stamp} is not safe`);
        assertEquals(shapeOf(stamp), {
          kind: "scatter",
          dtype,
          op,
          count,
          root: 1023,
          algorithm: 15,
          reproducible: false,
        });
      }
    }
  }
});

Deno.test("a reproducible call's stamp unpacks to it, and differs from the plain call's", () => {
  for (const dtype of DTYPES) {
    for (const count of [1, 1001, 2 ** 27]) {
      const stamp = callStamp("reduce", dtype, count, "avg", 1023, 15, true);
      assert_(Number.isSafeInteger(stamp), `${dtype} ${count}: ${stamp} is not safe`);
      assertEquals(shapeOf(stamp), {
        kind: "reduce",
        dtype,
        op: "avg",
        count,
        root: 1023,
        algorithm: 15,
        reproducible: true,
      });
      assert_(stamp !== callStamp("reduce", dtype, count, "avg", 1023, 15), "same stamp");
    }
  }
});

Deno.test("no stamp is a 32-bit integer, so none changes how V8 compiles the code it flows through", () => {
  for (const kind of ["p2p", "barrier", "allreduce", "scatter"] as const) {
    for (const count of [0, 1, 255, 256, 2 ** 29]) {
      for (const reproducible of count > 0 && count <= 2 ** 27 ? [false, true] : [false]) {
        const stamp = callStamp(kind, "f32", count, "sum", 0, 0, reproducible);
        assert_(stamp > 2 ** 31 - 1, `${kind} of ${count}: stamp ${stamp} fits an int32`);
        assertEquals(shapeOf(stamp).count, count);
      }
    }
  }
});
