// Runs a task with a cache folder of its own (XDG_CACHE_HOME: where the limits are kept) while it
// still finds Deno's own cache of npm packages.

/** Deno's own cache, which a task with another XDG_CACHE_HOME must still find. */
const DENO_DIR = JSON.parse(
  new TextDecoder().decode(
    new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).outputSync().stdout,
  ),
).denoDir as string;

/** Runs `deno run -A <args>` with `cache` as its cache folder; exit code, stdout and stderr. */
export async function taskWithCache(args: string[], cache: string) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--experimental-wasm-fp16", ...args],
    env: { XDG_CACHE_HOME: cache, DENO_DIR },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(600_000),
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code, out: text(stdout), err: text(stderr) };
}
