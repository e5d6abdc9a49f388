/**
 * iallreduce, ibcast and ialltoall: a collective issued, then computation on the rank's own
 * thread, then awaited (OSU's non-blocking tests). The harness times each size three ways —
 * the call alone (pure communication), the call with as much computation as the pure time between
 * issue and await (overall), and the computation alone — and reports how much of the call hid
 * behind the computation: overlap = 100 × (1 − (overall − compute) / pure), at least 0.
 * @module
 */

import { ALLREDUCE } from "./allreduce.ts";
import { ALLTOALL } from "./alltoall.ts";
import { BCAST } from "./bcast.ts";
import type { NonBlockingName, PrimitiveSpec } from "./spec.ts";

/**
 * Work on this rank's thread for `us` µs that never yields to the event loop (OSU's dummy
 * compute): what a call progresses meanwhile, it progresses without this thread's help.
 */
export function computeFor(us: number): void {
  const end = performance.now() + us / 1e3;
  while (performance.now() < end) {
    // Busy: the thread is the rank's own computation.
  }
}

/** `base`'s collective, issued and awaited around computation (out of place only). */
function overlapped(name: NonBlockingName, base: PrimitiveSpec): PrimitiveSpec {
  return {
    ...base,
    name,
    inPlace: false,
    overlap: true,
    prepare(comm, maxCount, o) {
      const prepared = base.prepare(comm, maxCount, o);
      return {
        sized(count) {
          const c = prepared.sized(count);
          return {
            ...c,
            withCompute: (us) => ({
              ...c,
              run: async () => {
                const call = c.run();
                computeFor(us);
                await call;
              },
            }),
          };
        },
        free: () => prepared.free(),
      };
    },
  };
}

/** iallreduce's case (osu_iallreduce). */
export const IALLREDUCE: PrimitiveSpec = overlapped("iallreduce", ALLREDUCE);

/** ibcast's case (osu_ibcast). */
export const IBCAST: PrimitiveSpec = overlapped("ibcast", BCAST);

/** ialltoall's case (osu_ialltoall). */
export const IALLTOALL: PrimitiveSpec = overlapped("ialltoall", ALLTOALL);
