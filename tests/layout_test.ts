// The house's rules (docs/design.md, "Layers"): every import points down the layers, no module
// imports itself round a circle, nothing below the web line uses a Deno API (and the core bundles
// for browsers), the core trainer and bench use the library through its entries, only a
// transport's own files and the registries name a transport, every file opens with what it holds,
// and every repository path a comment or a doc names exists.
import { assertEquals } from "./_assert.ts";
import { TRANSPORT_NAMES } from "../deno/transport_table.ts";
import { bundlePage, PAGE_ENTRIES } from "../scripts/browser/page_server.ts";

const ROOT = new URL("../", import.meta.url);
const ENTRY_FOLDERS = [
  "kernels",
  "primitives",
  "bench",
  "trainer",
  "examples",
  "web",
  "deno",
  "scripts",
];
const ENTRIES = ["mod.ts", "core.ts", "internal.ts"];

/**
 * Layers from the ground up; a module may import its own layer and those below. Everything up to
 * `web` is the core (it runs in a browser tab);
 * `deno/`, `mod.ts` and `scripts/` sit above the web line.
 */
const LAYERS: [string, RegExp][] = [
  ["kernels", /^kernels\//],
  ["types", /^primitives\/(types|errors|platform)\.ts$/],
  ["memory", /^primitives\/memory\//],
  ["transports", /^primitives\/transports\//],
  ["collectives", /^primitives\/collectives\//],
  ["registry", /^primitives\/(registry|auto)\.ts$/],
  ["communicator", /^primitives\/communicator\//],
  ["launch", /^primitives\/launch\//],
  ["core.ts, internal.ts", /^(core|internal)\.ts$/],
  ["bench, trainer, examples", /^(bench|trainer|examples)\//],
  ["web", /^web\//],
  ["deno/platform", /^deno\/platform\//],
  ["deno/files", /^deno\/files\//],
  ["deno/transports", /^deno\/transports\//],
  ["deno/transport_table.ts", /^deno\/transport_table\.ts$/],
  ["deno/launch", /^deno\/launch\//],
  ["mod.ts", /^mod\.ts$/],
  ["deno/mod.ts", /^deno\/mod\.ts$/],
  ["scripts/common", /^scripts\/common\//],
  ["scripts", /^scripts\//],
];
const WEB_LINE = LAYERS.findIndex(([name]) => name === "deno/platform");

/** Files written by `deno task build:wasm`, not by hand. */
const GENERATED = /\.generated\.ts$/;

function layerOf(path: string): number {
  const index = LAYERS.findIndex(([, pattern]) => pattern.test(path));
  if (index < 0) throw new Error(`${path} is in no layer`);
  return index;
}

/** Every file under the absolute folder `dir`, relative to it. */
function filesIn(dir: string, prefix = ""): string[] {
  return [...Deno.readDirSync(dir)].flatMap((e) =>
    e.isDirectory ? filesIn(`${dir}/${e.name}`, `${prefix}${e.name}/`) : [`${prefix}${e.name}`]
  );
}

function filesUnder(folder: string, ends: RegExp): string[] {
  const files: string[] = [];
  for (const entry of Deno.readDirSync(new URL(folder, ROOT))) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) files.push(...filesUnder(path, ends));
    else if (ends.test(entry.name)) files.push(path);
  }
  return files;
}

const SOURCES = [...ENTRIES, ...ENTRY_FOLDERS.flatMap((f) => filesUnder(f, /\.ts$/))];
const CORE = SOURCES.filter((path) => layerOf(path) < WEB_LINE);

function read(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

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
        deps.map((d) => local(d.code?.specifier ?? d.type?.specifier)).filter((d): d is string =>
          d !== undefined && d.endsWith(".ts")
        ),
      );
    }
    return graph;
  } finally {
    Deno.removeSync(entry);
  }
}

const graph = importGraph();

/** The lines of `path` that are code (comments and JSDoc dropped). */
function codeLines(path: string): [number, string][] {
  const lines: [number, string][] = [];
  let inBlock = false;
  read(path).split("\n").forEach((line, i) => {
    let code = line;
    if (inBlock) {
      const end = code.indexOf("*/");
      if (end < 0) return;
      code = code.slice(end + 2);
      inBlock = false;
    }
    code = code.replace(/\/\*.*?\*\//g, "");
    const start = code.indexOf("/*");
    if (start >= 0) [code, inBlock] = [code.slice(0, start), true];
    code = code.replace(/(^|[^:"'`])\/\/.*$/, "$1");
    if (code.trim()) lines.push([i + 1, code]);
  });
  return lines;
}

Deno.test("layout: every source file is in the import graph", () => {
  assertEquals(SOURCES.filter((path) => !graph.has(path)), []);
});

Deno.test("layout: every import points to its own layer or one below", () => {
  const upward = [...graph].flatMap(([from, deps]) =>
    deps.filter((to) => layerOf(to) > layerOf(from)).map((to) => `${from} -> ${to}`)
  );
  assertEquals(upward, []);
});

Deno.test("layout: what builds on the library uses it through its entries, and the trainer and bench stay apart", () => {
  // The core library is primitives/ and kernels/, its entries core.ts, internal.ts and
  // kernels/mod.ts; the Deno runtime is deno/, its entries mod.ts and deno/mod.ts.
  const library = /^(primitives\/|kernels\/(?!mod\.ts$))/;
  const runtime = /^deno\/(?!mod\.ts$)/;
  const crossings = [...graph].flatMap(([from, deps]) =>
    deps.filter((to) =>
      (/^(trainer|bench|web|scripts)\//.test(from) && library.test(to)) ||
      (from.startsWith("scripts/") && runtime.test(to)) ||
      (from.startsWith("trainer/") && to.startsWith("bench/")) ||
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

Deno.test("layout: nothing below the web line uses a Deno API", () => {
  const deno = /\bDeno\.|["'](node|jsr):/;
  const found = CORE.flatMap((path) =>
    codeLines(path).filter(([, code]) => deno.test(code)).map(([n, code]) =>
      `${path}:${n}: ${code.trim()}`
    )
  );
  assertEquals(found, []);
});

Deno.test("layout: the core entry and the page's bundle build for browsers, importing nothing else", async () => {
  const core = await bundlePage(["core.ts"]);
  try {
    const bundled = filesIn(core).filter((f) => !f.startsWith("chunk-")).sort();
    assertEquals(
      bundled,
      [...PAGE_ENTRIES, "core.ts"].map((e) => e.replace(/\.ts$/, ".js")).sort(),
    );
    // A browser resolves relative imports only: a `node:` or package import left in would fail.
    const bare = filesIn(core).flatMap((f) =>
      [...Deno.readTextFileSync(`${core}/${f}`).matchAll(/^import [^;]*? from "([^".][^"]*)";/gm)]
        .map(([, specifier]) => `${f}: ${specifier}`)
    );
    assertEquals(bare, []);
  } finally {
    await Deno.remove(core, { recursive: true });
  }
});

Deno.test("layout: only a transport's own files and the registries name a transport in code", () => {
  // `gpu` is also a memory kind and a device: only its use as a transport counts.
  const names = TRANSPORT_NAMES.filter((name) => name !== "gpu").join("|");
  const literal = new RegExp(`["'\`](${names})["'\`]|transport\\S* *(===|!==|:) *"gpu"`);
  const own = new RegExp(
    `^(primitives/registry\\.ts|deno/transport_table\\.ts|(primitives|deno)/transports/(${
      TRANSPORT_NAMES.join("|")
    })[a-z_]*\\.ts)$`,
  );
  // A probe of one transport's wire (bench/README.md) names what it probes.
  const probes = /^scripts\/limits\/probes\//;
  const named = SOURCES.filter((p) => !own.test(p) && !probes.test(p)).flatMap((path) =>
    codeLines(path).filter(([, code]) =>
      !/^\s*(import|export) .* from /.test(code) && literal.test(code)
    ).map(([n, code]) => `${path}:${n}: ${code.trim()}`)
  );
  assertEquals(named, []);
});

Deno.test("layout: every source file opens with what it holds (one concern; two said so)", () => {
  // No line cap: a file holds one concern, and its header says which (docs/design.md, "Style").
  const tests = filesUnder("tests", /\.ts$/);
  // An algorithm's file holds its descriptor, whose JSDoc says what it is (allreduce_ring.ts).
  const algorithm = (path: string) =>
    /^primitives\/collectives\//.test(path) && /: (Host|Device)Algorithm</.test(read(path));
  const bare = [...SOURCES, ...tests].filter((path) => !GENERATED.test(path)).filter((path) => {
    if (algorithm(path)) return false;
    const head = read(path).trimStart();
    return !(head.startsWith("/**") && /@module/.test(head.slice(0, head.indexOf("*/")))) &&
      !head.startsWith("//");
  });
  assertEquals(bare, []);
});

/** A repository path as comments and docs write it: folders, a name and a known extension. */
const PATH =
  /(?<![\w./:@-])((?:\.\.?\/)*(?:[\w-]+\/)+[\w.-]+\.(?:ts|md|wgsl|py|json|sh|c|html))\b/g;
/** A bare file name, in backticks or not (`stamp.ts`, (closing_check.ts)). */
const BARE = /(?<![\w./:@*-])([\w-]+\.(?:ts|wgsl))\b/g;
/** Files of a user's own, as the docs' examples name them. */
const USERS_FILES = new Set(["main.ts", "my_rank.ts"]);

Deno.test("layout: every repository path a comment or a doc names exists", () => {
  const docs = ["README.md", ...filesUnder("docs", /\.md$/), ...filesUnder("tests", /\.md$/)];
  const bench = filesUnder("bench", /\.md$/);
  const tests = filesUnder("tests", /\.ts$/);
  const { stdout } = new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard"],
    cwd: ROOT,
  }).outputSync();
  const repository = new TextDecoder().decode(stdout).split("\n").filter(Boolean);
  const basenames = new Set(repository.map((p) => p.split("/").at(-1)));
  const top = new Set(repository.filter((p) => p.includes("/")).map((p) => p.split("/")[0]));
  // A path names a repository file by its whole path from the root or from the file's folder,
  // or, where it does not start at a top folder, by its tail below one (`communicator/stamp.ts`
  // inside primitives/).
  const names = (path: string, folder: string) => {
    const resolve = (from: string) => {
      let escapes = false;
      const parts = (from + path).split("/").reduce<string[]>((parts, part) => {
        if (part === "..") escapes ||= parts.pop() === undefined;
        else if (part !== ".") parts.push(part);
        return parts;
      }, []);
      return { clean: parts.join("/"), escapes };
    };
    const [fromFolder, fromRoot] = [resolve(folder), resolve("")];
    // Beside the checkout (the shared tools, a user's project), or what a command writes (out/).
    if (fromFolder.escapes || fromRoot.escapes || fromRoot.clean.startsWith("out/")) return true;
    const clean = fromFolder.clean;
    const tail = path.replace(/^(\.\.?\/)+/, "");
    const anchored = top.has(tail.split("/")[0]);
    return repository.some((file) =>
      file === clean || file === tail || (!anchored && file.endsWith(`/${tail}`))
    );
  };
  const dangling: string[] = [];
  for (const file of [...SOURCES, ...tests, ...docs, ...bench]) {
    const text = file.endsWith(".md")
      ? read(file)
      : read(file).split("\n").filter((l) => /^\s*(\*|\/\/|\/\*)/.test(l)).join("\n");
    const folder = file.includes("/") ? file.slice(0, file.lastIndexOf("/") + 1) : "";
    for (const [, path] of text.matchAll(PATH)) {
      // Other projects' sources, quoted in logs.
      if (/^(\.\.\/){3,}/.test(path)) continue;
      if (!names(path, folder)) dangling.push(`${file}: ${path}`);
    }
    for (const [, name] of text.matchAll(BARE)) {
      if (!basenames.has(name) && !USERS_FILES.has(name)) dangling.push(`${file}: ${name}`);
    }
  }
  assertEquals(dangling, []);
});
