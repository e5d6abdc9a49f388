// The public API as a user meets it (docs/design.md, "Entries"): mod.ts keeps to what a user of
// the library calls, every exported function of an entry takes at most two positional arguments
// and an options object (Deno std's rule; the kernels' entry takes operands as BLAS does), and
// every JSDoc example is code that runs (the test task runs them with `deno test --doc`; none may
// be skipped).
import { assert_, assertEquals } from "./_assert.ts";

const ROOT = new URL("../", import.meta.url);
const ENTRIES = [
  "mod.ts",
  "core.ts",
  "internal.ts",
  "kernels/mod.ts",
  "bench/mod.ts",
  "trainer/mod.ts",
  "deno/mod.ts",
];

interface DocParam {
  kind: string;
  name?: string;
  optional?: boolean;
  left?: DocParam;
}
interface DocMethod {
  name: string;
  functionDef: { params: DocParam[] };
}
interface DocSymbol {
  name: string;
  declarations: {
    kind: string;
    def: { params?: DocParam[]; methods?: DocMethod[]; constructors?: DocMethod[] };
  }[];
}

/** Each entry's exported symbols, from `deno doc --json`. */
function exportsOf(): Map<string, DocSymbol[]> {
  const { stdout, success } = new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...ENTRIES],
    cwd: ROOT,
  }).outputSync();
  assertEquals(success, true, "deno doc failed");
  const doc = JSON.parse(new TextDecoder().decode(stdout));
  const entries = new Map<string, DocSymbol[]>();
  for (const [url, module] of Object.entries(doc.nodes)) {
    entries.set(url.slice(ROOT.href.length), (module as { symbols: DocSymbol[] }).symbols);
  }
  return entries;
}

const EXPORTS = exportsOf();

Deno.test("api: mod.ts exports what a user of the library calls, about thirty names", () => {
  const names = EXPORTS.get("mod.ts")!.map((s) => s.name).sort();
  assert_(names.length <= 32, `mod.ts exports ${names.length} names: ${names.join(", ")}`);
  for (const name of ["Communicator", "spawnRanks", "launchGroup", "joinFromEnv", "CommError"]) {
    assert_(names.includes(name), `mod.ts does not export ${name}`);
  }
});

Deno.test("api: exported functions take at most two positional arguments and an options object", () => {
  const wide: string[] = [];
  for (const [entry, symbols] of EXPORTS) {
    // A kernel runs per chunk of every call: its operands are positional, as BLAS's are.
    if (entry === "kernels/mod.ts") continue;
    for (const symbol of symbols) {
      for (const declaration of symbol.declarations) {
        if (declaration.kind !== "function") continue;
        const params = declaration.def.params ?? [];
        // A third parameter is the options object: it may be left out.
        const last = params[2];
        const optional = last && (last.optional || last.kind === "assign");
        if (params.length > 3 || (params.length === 3 && !optional)) {
          wide.push(
            `${entry}: ${symbol.name}(${params.map((p) => p.name ?? p.left?.name).join(", ")})`,
          );
        }
      }
    }
  }
  assertEquals(wide, []);
});

Deno.test("api: a parameter with a default reads as optional in deno doc", () => {
  // deno doc prints `options: X = {}` as `options: X`: a user reads it as required.
  const defaulted: string[] = [];
  for (const [entry, symbols] of EXPORTS) {
    for (const symbol of symbols) {
      for (const { kind, def } of symbol.declarations) {
        const signatures: [string, DocParam[]][] = kind === "function"
          ? [[symbol.name, def.params ?? []]]
          : kind === "class"
          ? (def.methods ?? []).map((m) => [`${symbol.name}.${m.name}`, m.functionDef.params])
          : [];
        for (const [name, params] of signatures) {
          for (const p of params) {
            if (p.kind === "assign") defaulted.push(`${entry}: ${name}(${p.left?.name} = …)`);
          }
        }
      }
    }
  }
  assertEquals(defaulted, []);
});

Deno.test("api: the test task runs the JSDoc examples in the same run as the tests, counted with them", () => {
  const { tasks } = JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT)));
  const test: string = tasks.test;
  // One command: a failing test file cannot keep the examples from running (as `a && b` did).
  assert_(!/&&|;|\|\|/.test(test), test);
  assert_(/^deno test .*--doc .*\btests\/ .*\bmod\.ts\b/.test(test), test);
});

Deno.test("api: no JSDoc example is skipped", () => {
  const skipped: string[] = [];
  const visit = (folder: string) => {
    for (const entry of Deno.readDirSync(new URL(folder, ROOT))) {
      const path = folder ? `${folder}/${entry.name}` : entry.name;
      if (entry.isDirectory && !/^(\.|node_modules|out|tests|docs)/.test(entry.name)) visit(path);
      else if (
        entry.name.endsWith(".ts") &&
        /```ts\s+ignore/.test(Deno.readTextFileSync(new URL(path, ROOT)))
      ) {
        skipped.push(path);
      }
    }
  };
  visit("");
  assertEquals(skipped, []);
});

Deno.test("api: the docs of every entry lint without a warning (deno doc --lint)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", ...ENTRIES],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const said = new TextDecoder().decode(out.stderr).split("\n").filter((l) =>
    /Warning|error/.test(l)
  );
  assertEquals([out.code, said], [0, []]);
});
