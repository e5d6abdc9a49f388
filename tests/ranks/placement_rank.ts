// Rank program for the mixed-placement test: ranks disagree on in place vs out of place and on
// memory kinds in one allreduce, which must not change the result on any rank (nor, out of place,
// the input), with `auto` and with every algorithm the transport offers. Its first allreduce runs
// right after start-up, before slower ranks could have finished joining.
import type { Communicator } from "../../mod.ts";
import { inputValue, wrongReduced } from "../../bench/exact_inputs.ts";
import { algorithmsFor } from "../../primitives/auto.ts";
import { TRANSPORT_TABLE } from "../../deno/transport_table.ts";

/** Wrong elements of this rank's results, for allreduces of each count in `counts`. */
export async function run(comm: Communicator, counts: number[]): Promise<number> {
  const memory = comm.rank % 3 === 1 ? "host" : "shared";
  const outOfPlace = comm.rank % 2 === 1;
  let wrong = 0;
  const algorithms = [
    "auto",
    ...algorithmsFor("allreduce", { transport: TRANSPORT_TABLE.facts(comm.transport) }),
  ];
  for (const count of counts) {
    for (const algorithm of algorithms) {
      const input = comm.alloc(count, { memory }).view;
      for (let i = 0; i < count; i++) input[i] = inputValue("sum", comm.rank, comm.size, i);
      const out = outOfPlace ? comm.alloc(count, { memory }).view : undefined;
      await comm.allreduce(input, { out, algorithm });
      wrong += wrongReduced(out ?? input, "sum", "f32", comm.size);
      if (out) {
        wrong += input.filter((v, i) => v !== inputValue("sum", comm.rank, comm.size, i)).length;
      }
    }
  }
  return wrong;
}
