// The house's rules (docs/design.md, "Layers"): every import points down the layers, no module
// imports itself round a circle, the trainer uses the library through mod.ts, and no code outside
// a transport's own files and the registry names a transport.
import { assertEquals } from "./_assert.ts";

const ROOT = new URL("../", import.meta.url);
const ENTRY_FOLDERS = ["kernels", "primitives", "bench", "trainer", "scripts"];

/** Layers from the ground up; a module may import its own layer and those below. */
const LAYERS: [string, RegExp][] = [
  ["kernels", /^kernels\//],
  ["types", /^primitives\/(types|errors)\.ts$/],
  ["memory", /^primitives\/memory\//],
  ["transports", /^primitives\/transports\//],
  ["collectives", /^primitives\/collectives\//],
  ["registry", /^primitives\/(registry|cost_model)\.ts$/],
  ["communicator", /^primitives\/communicator\//],
  ["launch", /^primitives\/launch\//],
  ["mod.ts", /^mod\.ts$/],
  ["bench, trainer", /^(bench|trainer)\//],
  ["scripts", /^scripts\//],
];

function layerOf(path: string): number {
  const index = LAYERS.findIndex(([, pattern]) => pattern.test(path));
  if (index < 0) throw new Error(`${path} is in no layer`);
  return index;
}

function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  for (const entry of Deno.readDirSync(new URL(folder, ROOT))) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) files.push(...sourceFiles(path));
    else if (entry.name.endsWith(".ts")) files.push(path);
  }
  return files;
}

const SOURCES = ["mod.ts", ...ENTRY_FOLDERS.flatMap(sourceFiles)];

/** Every module's project imports (paths from the root), from one `deno info` of all sources. */
function importGraph(): Map<string, string[]> {
  const entry = Deno.makeTempFileSync({ suffix: ".ts" });
  try {
    Deno.writeTextFileSync(
      entry,
      SOURCES.map((path) => `import "${new URL(path, ROOT).href}";`).join("\n"),
    );
    const { stdout, success } = new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      stderr: "inherit",
    }).outputSync();
    assertEquals(success, true, "deno info failed");
    const info = JSON.parse(new TextDecoder().decode(stdout));
    const graph = new Map<string, string[]>();
    const local = (specifier?: string) =>
      specifier?.startsWith(ROOT.href) ? specifier.slice(ROOT.href.length) : undefined;
    for (const module of info.modules) {
      const from = local(module.specifier);
      if (!from) continue;
      const deps = (module.dependencies ?? []) as {
        code?: { specifier: string };
        type?: { specifier: string };
      }[];
      graph.set(
        from,
        deps.map((d) => local(d.code?.specifier ?? d.type?.specifier)).filter((d) =>
          d !== undefined
        ),
      );
    }
    return graph;
  } finally {
    Deno.removeSync(entry);
  }
}

const graph = importGraph();

Deno.test("layout: every source file is in the import graph", () => {
  assertEquals(SOURCES.filter((path) => !graph.has(path)), []);
});

Deno.test("layout: every import points to its own layer or one below", () => {
  const upward = [...graph].flatMap(([from, deps]) =>
    deps.filter((to) => layerOf(to) > layerOf(from)).map((to) => `${from} -> ${to}`)
  );
  assertEquals(upward, []);
});

Deno.test("layout: the trainer uses the library through mod.ts, and bench and trainer stay apart", () => {
  const crossings = [...graph].flatMap(([from, deps]) =>
    deps.filter((to) =>
      (from.startsWith("trainer/") && /^(primitives|bench)\//.test(to)) ||
      (from.startsWith("bench/") && to.startsWith("trainer/"))
    ).map((to) => `${from} -> ${to}`)
  );
  assertEquals(crossings, []);
});

Deno.test("layout: no import circle", () => {
  const circles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (module: string) => {
    state.set(module, "open");
    path.push(module);
    for (const dep of graph.get(module) ?? []) {
      if (state.get(dep) === "open") {
        circles.push([...path.slice(path.indexOf(dep)), dep].join(" -> "));
      } else if (!state.has(dep)) visit(dep);
    }
    path.pop();
    state.set(module, "done");
  };
  for (const module of graph.keys()) if (!state.has(module)) visit(module);
  assertEquals(circles, []);
});

Deno.test("layout: only a transport's own files and the registry name a transport in code", async () => {
  const { TRANSPORT_NAMES } = await import("../primitives/registry.ts");
  // `gpu` is also a memory kind and a device: only its use as a transport counts.
  const names = TRANSPORT_NAMES.filter((name) => name !== "gpu").join("|");
  const literal = new RegExp(`["'\`](${names})["'\`]|transport\\S* *(===|!==|:) *"gpu"`);
  const own = new RegExp(
    `^primitives/(registry\\.ts|transports/(${TRANSPORT_NAMES.join("|")})[a-z_]*\\.ts)$`,
  );
  // A probe of one transport's wire (bench/README.md) names what it probes.
  const probes = /^bench\/probes\//;
  const named: string[] = [];
  for (const path of SOURCES.filter((p) => !own.test(p) && !probes.test(p))) {
    Deno.readTextFileSync(new URL(path, ROOT)).split("\n").forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, "");
      if (/^\s*(\*|\/\*)/.test(code) || /^\s*(import|export) .* from /.test(code)) return;
      if (literal.test(code)) named.push(`${path}:${i + 1}: ${line.trim()}`);
    });
  }
  assertEquals(named, []);
});
