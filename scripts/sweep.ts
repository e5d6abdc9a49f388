/**
 * `deno task sweep [flags]`: the whole matrix — primitives × transports × memory kinds × procs —
 * one CSV (and JSON sidecar) per combination plus an index.csv, skipping (and saying so) the
 * combinations a transport or primitive does not support.
 * @module
 */

import { stringify } from "csv-stringify/sync";
import { type PrimitiveName, PRIMITIVES } from "../bench/primitives.ts";
import { TRANSPORT_NAMES, TRANSPORTS } from "../primitives/registry.ts";
import { MEMORY_KINDS } from "../primitives/types.ts";
import {
  BENCHMARK_FLAGS,
  checkDevice,
  interruptible,
  MAX_PROCS,
  planRun,
  reportFailure,
  runPlan,
} from "./_benchmark.ts";
import {
  type FlagSpec,
  integer,
  listOf,
  parseFlags,
  usage,
  UsageError,
  userPath,
  writableFolder,
} from "./_flags.ts";
import { collectMetadata } from "./_metadata.ts";

const PRIMITIVE_NAMES = Object.keys(PRIMITIVES) as PrimitiveName[];
const { procs: _procs, transport: _transport, memory: _memory, csv: _csv, json: _json, ...shared } =
  BENCHMARK_FLAGS;

const FLAGS: Record<string, FlagSpec> = {
  primitives: { help: "comma-separated primitives", default: PRIMITIVE_NAMES.join(",") },
  transports: { help: "comma-separated transports", default: TRANSPORT_NAMES.join(",") },
  memory: { help: "comma-separated memory kinds", default: MEMORY_KINDS.join(",") },
  procs: { help: "comma-separated rank counts", default: "2,4,8" },
  out: { help: "directory for the CSVs and index.csv", default: "out/sweep" },
  ...shared,
  max: { ...shared.max, default: "4M" },
};

async function main(argv: string[]): Promise<number> {
  let values;
  let axes;
  try {
    values = parseFlags(FLAGS, argv);
    if (values.help) {
      console.log(usage("sweep", "Measures every combination into one CSV each.", FLAGS));
      return 0;
    }
    axes = {
      primitives: listOf("primitives", values.primitives!, PRIMITIVE_NAMES),
      transports: listOf("transports", values.transports!, TRANSPORT_NAMES),
      memory: listOf("memory", values.memory!, MEMORY_KINDS),
      procs: values.procs!.split(",").map((p) => integer("procs", p.trim(), 1, MAX_PROCS)),
    };
    // Validate the shared flags once, on a combination that always exists.
    const first = TRANSPORTS[TRANSPORT_NAMES[0]];
    planRun("allreduce", {
      ...values,
      procs: "2",
      transport: first.name,
      memory: first.bestMemory,
    });
    writableFolder("out", userPath(values.out!));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`dccl sweep: ${e.message}`);
    return 2;
  }

  const out = userPath(values.out!);
  Deno.mkdirSync(out, { recursive: true });
  const indexPath = `${out}/index.csv`;
  const indexColumns = [
    "primitive",
    "transport",
    "memory",
    "procs",
    "status",
    "rows",
    "wrong",
    "csv",
    "note",
  ];
  Deno.writeTextFileSync(indexPath, stringify([indexColumns]));
  const index = (cells: (string | number)[]) =>
    Deno.writeTextFileSync(indexPath, stringify([cells]), { append: true });

  const machine = await collectMetadata(argv, {});
  let failed = 0;
  for (const primitive of axes.primitives) {
    for (const transport of axes.transports) {
      for (const memory of axes.memory) {
        for (const procs of axes.procs) {
          const name = `${primitive}-${transport}-${memory}-${procs}`;
          const skip = (why: string) => {
            console.log(`skip ${name}: ${why}`);
            index([primitive, transport, memory, procs, "skipped", 0, 0, "", why]);
          };
          if (!TRANSPORTS[transport].memory.includes(memory)) {
            skip(`${transport} carries ${TRANSPORTS[transport].memory.join(", ")} memory`);
            continue;
          }
          let plan;
          try {
            plan = planRun(primitive, {
              ...values,
              procs: String(procs),
              transport,
              memory,
              csv: `${out}/${name}.csv`,
              json: `${out}/${name}.json`,
            });
          } catch (e) {
            if (!(e instanceof UsageError)) throw e;
            skip(e.message);
            continue;
          }
          try {
            await checkDevice(plan);
          } catch (e) {
            if (!(e instanceof UsageError)) throw e;
            skip(e.message);
            continue;
          }
          const metadata = { ...machine, options: { ...plan.sweep, procs } };
          const started = performance.now();
          try {
            const summary = await interruptible((signal) =>
              runPlan(plan, { table: false, metadata, signal })
            );
            const seconds = ((performance.now() - started) / 1000).toFixed(1);
            const status = summary.wrong > 0 ? "wrong" : "ok";
            if (summary.wrong > 0) failed++;
            console.log(
              `${status.padEnd(5)} ${name}: ${summary.rows} sizes, ${summary.wrong} wrong, ` +
                `${seconds} s → ${plan.csv}`,
            );
            index([
              primitive,
              transport,
              memory,
              procs,
              status,
              summary.rows,
              summary.wrong,
              plan.csv!,
              "",
            ]);
          } catch (e) {
            const code = reportFailure(`dccl sweep ${name}`, plan, e);
            index([primitive, transport, memory, procs, "failed", 0, 0, plan.csv!, String(e)]);
            if (code === 130) return code;
            failed++;
          }
        }
      }
    }
  }
  console.log(`index: ${indexPath}`);
  return failed > 0 ? 1 : 0;
}

Deno.exit(await main(Deno.args));
