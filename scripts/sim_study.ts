/**
 * `deno task sim-study crossovers [flags]`: where each algorithm wins, by rank count (2 … 1024)
 * and size, on a simulated fabric (the seed study's Table 4.1 as a function of scale), and
 * whether `auto` picks the winner. Every cell is one call after a barrier with phantom payloads,
 * the slowest rank's virtual time. docs/transports/sim.md.
 * @module
 */

import { launchGroup } from "../deno/mod.ts";
import { algorithmsFor, describeFabric, SIM, type SimModel } from "../internal.ts";
import { defineFlags, type Flags, listOf, size, UsageError, writableFile } from "./common/flags.ts";
import { planModel, SIM_FLAGS } from "./bench/sim_flags.ts";
import { type Task, taskMain } from "./common/task.ts";
import { stringify, writeAtomically } from "../deno/mod.ts";
import type { CrossoverArgs, CrossoverTimes } from "./sim_study/crossover_rank.ts";

const STUDIES = ["crossovers"] as const;
const COLLECTIVES = ["allreduce", "bcast", "reduce"] as const;
type Collective = typeof COLLECTIVES[number];

const { hosts: _hosts, payload: _payload, ...MODEL_FLAGS } = SIM_FLAGS;

const FLAGS = defineFlags({
  ...MODEL_FLAGS,
  ranks: {
    help: "rank counts, comma-separated",
    kind: "integers",
    min: 2,
    max: SIM.maxRanks!,
    default: [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
  },
  collective: {
    help: `collectives, comma-separated: ${COLLECTIVES.join(", ")}`,
    default: "allreduce",
  },
  min: { help: "smallest buffer in elements (f32)", default: "1" },
  max: { help: "largest buffer in elements (f32); sizes step ×4", default: "16M" },
  csv: { help: "write every cell to this CSV file", path: true },
});

interface StudyPlan {
  models: SimModel[];
  collectives: Collective[];
  counts: number[];
  csv?: string;
}

function plan(v: Flags<typeof FLAGS>, positionals: string[]): StudyPlan {
  const [study, ...rest] = positionals;
  if (
    study === undefined || rest.length > 0 || !STUDIES.includes(study as typeof STUDIES[number])
  ) {
    throw new UsageError(
      `expected one study: ${STUDIES.join(", ")}; got ${positionals.join(" ") || "none"}`,
    );
  }
  const min = size("min", v.min, "f32"), max = size("max", v.max, "f32");
  if (min > max) throw new UsageError(`--min ${v.min} is not accepted: above --max ${v.max}`);
  const counts: number[] = [];
  for (let c = min; c <= max; c *= 4) counts.push(c);
  const flags = { ...v, hosts: undefined, payload: "phantom" as const };
  const models = v.ranks.map((p) => planModel(flags, SIM, p, () => 0)!);
  return {
    models,
    collectives: listOf("collective", v.collective, COLLECTIVES),
    counts,
    csv: v.csv === undefined ? undefined : writableFile("csv", v.csv),
  };
}

/** A size as a table row names it. */
function sizeName(count: number): string {
  const bytes = 4 * count;
  return bytes >= 2 ** 20
    ? `${bytes / 2 ** 20} MiB`
    : bytes >= 1024
    ? `${bytes / 1024} KiB`
    : `${bytes} B`;
}

async function run(p: StudyPlan, signal: AbortSignal): Promise<number> {
  console.log(
    `# dccl sim-study crossovers: one call after a barrier, the slowest rank's virtual time`,
  );
  console.log(`# p ranks on p / ${p.models[0].perHost} hosts; ${describeFabric(p.models[0])}`);
  const collectives = p.collectives.map((name) => ({
    name,
    algorithms: algorithmsFor(name, { transport: SIM }),
  }));
  const results: CrossoverTimes[] = [];
  for (const model of p.models) {
    const size = model.hosts * model.perHost;
    const started = performance.now();
    const group = launchGroup<CrossoverTimes>(
      new URL("./sim_study/crossover_rank.ts", import.meta.url),
      {
        size,
        transport: SIM.name,
        transportOptions: model,
        args: { collectives, counts: p.counts } satisfies CrossoverArgs,
        signal,
        timeoutMs: 600_000,
      },
    );
    const ranks = await group.results;
    // Each cell: the slowest rank's.
    const slowest = ranks[0].us.map((bySize, c) =>
      bySize.map((cells, s) => cells.map((_, k) => Math.max(...ranks.map((r) => r.us[c][s][k]))))
    );
    results.push({ us: slowest, picked: ranks[0].picked });
    console.error(
      `dccl sim-study: ${size} ranks simulated in ${
        ((performance.now() - started) / 1e3).toFixed(1)
      } s`,
    );
  }
  const rows: string[][] = [];
  let wrongPicks = 0;
  collectives.forEach(({ name, algorithms }, c) => {
    console.log(
      `\n# ${name}: the fastest algorithm (auto's pick, where another: auto→ its time / the best's)`,
    );
    const head = ["size", ...p.models.map((m) => String(m.hosts * m.perHost))];
    const width = 22;
    console.log(head.map((h, i) => i === 0 ? h.padStart(9) : h.padStart(width)).join(""));
    p.counts.forEach((count, s) => {
      const line = [sizeName(count).padStart(9)];
      p.models.forEach((model, m) => {
        const cells = results[m].us[c][s];
        const timesOf = cells.slice(0, algorithms.length);
        const best = timesOf.indexOf(Math.min(...timesOf));
        const autoUs = cells[algorithms.length], picked = results[m].picked[c][s];
        const wrong = picked !== algorithms[best] && autoUs > timesOf[best] * 1.02;
        if (wrong) wrongPicks++;
        line.push(
          (algorithms[best] + (wrong ? ` (${picked} ${(autoUs / timesOf[best]).toFixed(2)}×)` : ""))
            .padStart(width),
        );
        algorithms.forEach((a, k) =>
          rows.push([
            name,
            String(model.hosts * model.perHost),
            String(count),
            a,
            timesOf[k].toFixed(3),
            String(k === best),
            String(picked === a),
          ])
        );
      });
      console.log(line.join(""));
    });
  });
  console.log(`\n# auto picked a slower algorithm (by more than 2%) in ${wrongPicks} cells`);
  if (p.csv) {
    const header = ["collective", "ranks", "count", "algorithm", "us", "fastest", "auto_picked"];
    writeAtomically(p.csv, stringify([header, ...rows]));
    console.log(`# cells written to ${p.csv}`);
  }
  return 0;
}

const TASK: Task<StudyPlan, typeof FLAGS> = {
  name: "sim-study",
  synopsis: "sim-study crossovers",
  summary:
    "Where each algorithm wins by rank count and size on a simulated fabric, and auto's picks.",
  flags: FLAGS,
  positionals: true,
  plan,
  run,
};

Deno.exit(await taskMain(TASK, Deno.args));
