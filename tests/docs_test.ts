// What the docs promise a newcomer is there: every task of deno.json has its section in
// docs/cli.md (README points there for "every flag and task"), and the algorithm lists of
// docs/auto.md and README are the registry's.
import { assertEquals } from "./_assert.ts";
import { ALGORITHM_NAMES, ALGORITHMS } from "../primitives/registry.ts";
import { sideOfNeed } from "../primitives/collectives/algorithm.ts";
import { type CollectiveName, snakeCase } from "../primitives/collectives/collective_table.ts";
import { TRANSPORT_NAMES } from "../deno/transport_table.ts";

const ROOT = new URL("../", import.meta.url);

Deno.test("docs: every task of deno.json is in docs/cli.md", () => {
  const tasks = Object.keys(JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT))).tasks);
  const cli = Deno.readTextFileSync(new URL("docs/cli.md", ROOT));
  // `deno task a|b|c` names several at once.
  const named = new Set(
    [...cli.matchAll(/deno task ([\w:|-]+)/g)].flatMap((m) => m[1].split("|")),
  );
  // The project's own tasks (tests, checks, benchmarks, kernel builds) are README's.
  const own = new Set(["test", "check", "bench", "build:wasm"]);
  assertEquals(tasks.filter((t) => !own.has(t) && !named.has(t)), []);
});

/** The names a cell lists: comma-separated, each before its parenthesised note. */
function listed(cell: string): string[] {
  let depth = 0, plain = "";
  for (const c of cell) {
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (depth === 0) plain += c;
  }
  return plain.split(",").map((n) => n.trim()).filter((n) => n !== "");
}

Deno.test("docs: auto.md's table and README's list name every algorithm of the registry, and no other", () => {
  const auto = Deno.readTextFileSync(new URL("docs/auto.md", ROOT));
  const wrong: string[] = [];
  for (const collective of Object.keys(ALGORITHM_NAMES) as CollectiveName[]) {
    const docName = snakeCase(collective);
    const row = auto.split("\n").find((l) => l.split("|")[1]?.trim() === docName);
    if (!row) {
      wrong.push(`${collective}: no row`);
      continue;
    }
    const [host, device] = row.split("|").slice(2, 4).map(listed);
    for (const [side, cell] of [["host", host], ["device", device]] as const) {
      const registry = ALGORITHMS.of(collective)
        .filter((a) => sideOfNeed(a.needs) === side).map((a) => a.name);
      if (JSON.stringify([...cell].sort()) !== JSON.stringify([...registry].sort())) {
        wrong.push(`${collective} on ${side} buffers: docs ${cell}, registry ${registry}`);
      }
    }
  }
  const readme = Deno.readTextFileSync(new URL("README.md", ROOT));
  const paragraph = readme.slice(readme.indexOf("Algorithms: "), readme.indexOf("## The CLI"));
  const named = new Set([...paragraph.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]));
  const every = new Set(Object.values(ALGORITHM_NAMES).flat());
  for (const name of every) if (!named.has(name)) wrong.push(`README lacks ${name}`);
  // Besides the algorithms it names the transports they run on, and `auto`.
  const others = new Set<string>([...TRANSPORT_NAMES, "auto"]);
  for (const name of named) {
    if (!every.has(name) && !others.has(name)) wrong.push(`README names ${name}, no algorithm`);
  }
  assertEquals(wrong, []);
});
