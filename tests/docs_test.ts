// What the docs promise a newcomer is there: every task of deno.json has its section in
// docs/cli.md (README points there for "every flag and task").
import { assertEquals } from "./_assert.ts";

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

Deno.test("docs: the API docs of every entry lint without a warning", async () => {
  const entries = [
    "mod.ts",
    "web.ts",
    "internal.ts",
    "bench/mod.ts",
    "trainer/mod.ts",
    "deno/mod.ts",
  ];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", ...entries],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const said = new TextDecoder().decode(out.stderr).split("\n").filter((l) =>
    /Warning|error/.test(l)
  );
  assertEquals([out.code, said], [0, []]);
});
