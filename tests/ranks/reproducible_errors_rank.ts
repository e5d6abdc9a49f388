// Rank program: the reproducible calls the library refuses, each message as the caller sees it.
import type { Communicator } from "../../core.ts";

export async function run(comm: Communicator): Promise<string[]> {
  const messages: string[] = [];
  const caught = async (call: () => Promise<void>) => {
    try {
      await call();
      messages.push("no error");
    } catch (e) {
      messages.push(`${(e as Error).name}: ${(e as Error).message}`);
    }
  };
  const buf = comm.alloc(4);
  await caught(() => comm.allreduce(buf, { op: "prod", reproducible: true }));
  await caught(() => comm.allreduce(buf, { reproducible: "yes" as unknown as boolean }));
  await caught(() => comm.allreduce(comm.alloc(5), { out: comm.alloc(2), reproducible: true }));
  await caught(() =>
    comm.allreduce(buf, { out: comm.alloc(2, { dtype: "f64" }), reproducible: true })
  );
  await caught(() => comm.allreduce(comm.alloc(2 ** 28), { reproducible: true }));
  await caught(() => comm.allreduce(buf, { out: comm.alloc(2), op: "max", reproducible: true }));
  return messages;
}
