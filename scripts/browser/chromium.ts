/**
 * Headless Chromium driven over the DevTools protocol on `--remote-debugging-pipe`: no port is
 * opened, so no other local user can attach (docs/security.md). Chromium reads commands on its fd
 * 3 and writes replies on fd 4, each a JSON message ended by a NUL byte; a small shell guard wires
 * those to this process's pipes, starts Chromium in a process group of its own and, once Chromium
 * has exited, kills what is left of the group and removes the private profile. A closed pipe ends
 * Chromium, so however this process ends (SIGKILL included) nothing of the run outlives it. Every
 * step has a wall-clock limit. Root needs `--no-sandbox`; WebGPU runs on SwiftShader.
 * @module
 */

/** The command Debian's `chromium` package installs. */
const CHROMIUM = "chromium";

/** Flags for a headless browser on a closed network, WebGPU on SwiftShader. */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--disable-background-timer-throttling",
  "--disable-renderer-backgrounding",
  "--disable-backgrounding-occluded-windows",
  "--enable-unsafe-webgpu",
  "--enable-features=Vulkan",
  "--use-vulkan=swiftshader",
  "--use-webgpu-adapter=swiftshader",
  // Room for the form on one line and the chart beside its axis in a screenshot.
  "--window-size=1280,900",
  "--remote-debugging-pipe",
];

/**
 * The guard (`setsid sh -c GUARD sh <folders> <chromium command…>`): Chromium gets the guard's
 * stdin as fd 3 and its stdout as fd 4 and runs in a session of its own; the guard lets go of both
 * pipes (so their ends close with this process), ignores the terminal's signals (this process
 * decides), waits for Chromium — ending it within a second of this process's death, however busy
 * Chromium is (a watcher of the parent: Chromium alone notices the closed pipe only when it next
 * reads it) — kills its session's leftovers, waits up to 5 s for them to go,
 * removes the folders (the profile, and the page's bundle: one a line) and exits with Chromium's
 * status (127: no such command).
 */
const GUARD = `
folders=$1; shift
exec 3<&0 4>&1
if command -v setsid >/dev/null 2>&1; then setsid "$@" </dev/null >/dev/null &
else "$@" </dev/null >/dev/null & fi
browser=$!
exec 3<&- 4>&- </dev/null >/dev/null
trap '' INT TERM HUP
parent=$PPID
( while kill -0 "$parent" 2>/dev/null; do sleep 1; done; kill -KILL -- "-$browser" 2>/dev/null ) &
watcher=$!
wait "$browser"
code=$?
kill -KILL "$watcher" 2>/dev/null
kill -KILL -- "-$browser" 2>/dev/null
tries=0
while [ "$tries" -lt 100 ] && ps -o stat= -s "$browser" 2>/dev/null | grep -qv '^Z'; do
  kill -KILL -- "-$browser" 2>/dev/null; sleep 0.05; tries=$((tries + 1))
done
printf '%s\\n' "$folders" | while IFS= read -r folder; do [ -n "$folder" ] && rm -rf -- "$folder"; done
exit "$code"
`;

/** Chromium is not installed: one line naming the Debian package. */
export class ChromiumMissing extends Error {
  /** Always `ChromiumMissing`. */
  override name = "ChromiumMissing";
  constructor() {
    super(
      "Chromium is not installed: install Debian's package chromium (apt-get install -y chromium)",
    );
  }
}

/** Whether Chromium can be started here (the `chromium` command exists). */
export async function chromiumAvailable(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command(CHROMIUM, { args: ["--version"] }).output();
    return success;
  } catch {
    return false;
  }
}

/** `promise`, or an Error naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

type Handler = (params: Record<string, unknown>, sessionId?: string) => void;

/** A DevTools protocol connection over Chromium's pipe: NUL-ended JSON messages both ways. */
class Cdp {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #next = 1;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly #handlers = new Map<string, Set<Handler>>();
  #closed?: Error;

  constructor(commands: WritableStream<Uint8Array>, replies: ReadableStream<Uint8Array>) {
    this.#writer = commands.getWriter();
    this.#read(replies).catch(() => {}).finally(() => {
      this.#closed = new Error("the browser closed its DevTools pipe");
      for (const p of this.#pending.values()) p.reject(this.#closed);
      this.#pending.clear();
    });
  }

  /** Splits the replies at NUL bytes and dispatches each message. */
  async #read(replies: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of replies) {
      let from = 0;
      for (let end = chunk.indexOf(0); end !== -1; end = chunk.indexOf(0, from)) {
        text += decoder.decode(chunk.subarray(from, end));
        this.#dispatch(JSON.parse(text));
        text = "";
        from = end + 1;
      }
      text += decoder.decode(chunk.subarray(from), { stream: true });
    }
  }

  #dispatch(m: {
    id?: number;
    error?: { message: string; data?: string };
    result?: unknown;
    method?: string;
    params?: Record<string, unknown>;
    sessionId?: string;
  }): void {
    if (m.id !== undefined) {
      const p = this.#pending.get(m.id);
      this.#pending.delete(m.id);
      if (m.error) {
        p?.reject(new Error(`${m.error.message}${m.error.data ? `: ${m.error.data}` : ""}`));
      } else p?.resolve(m.result);
    } else {
      for (const h of this.#handlers.get(m.method!) ?? []) h(m.params ?? {}, m.sessionId);
    }
  }

  /** Sends `method` (to the page of `sessionId`, if given); resolves with its result. */
  send<T = Record<string, unknown>>(
    method: string,
    params: Record<string, unknown> = {},
    options: { sessionId?: string; timeoutMs?: number } = {},
  ): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#next++;
    const reply = new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: (v) => resolve(v as T), reject });
    });
    const message = JSON.stringify({ id, method, params, sessionId: options.sessionId });
    this.#writer.write(new TextEncoder().encode(`${message}\0`)).catch(() => {});
    return within(reply, options.timeoutMs ?? 30_000, method);
  }

  /** Calls `handler` on every `method` event. */
  on(method: string, handler: Handler): void {
    const set = this.#handlers.get(method) ?? new Set();
    set.add(handler);
    this.#handlers.set(method, set);
  }

  /** Closes the command pipe: Chromium then exits. */
  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
  }
}

/** A binding the page calls (`ChromiumPage.expose`). */
export interface Binding {
  /** Resolves once the page's first `n` calls have been handled here. */
  arrived(n: number, timeoutMs?: number): Promise<void>;
}

/** A page of the browser, attached to. */
export class ChromiumPage {
  readonly #cdp: Cdp;
  readonly #session: string;
  /** Console messages and uncaught errors the page reported, for failures' messages. */
  readonly console: string[] = [];

  constructor(cdp: Cdp, session: string) {
    this.#cdp = cdp;
    this.#session = session;
    cdp.on("Runtime.consoleAPICalled", (p, s) => {
      if (s !== session) return;
      const args = (p.args as { value?: unknown; description?: string }[]) ?? [];
      this.console.push(`${p.type}: ${args.map((a) => a.value ?? a.description).join(" ")}`);
    });
    cdp.on("Runtime.exceptionThrown", (p, s) => {
      if (s !== session) return;
      const details = p.exceptionDetails as { exception?: { description?: string }; text?: string };
      this.console.push(`uncaught: ${details.exception?.description ?? details.text}`);
    });
  }

  #send<T = Record<string, unknown>>(method: string, params = {}, timeoutMs?: number) {
    return this.#cdp.send<T>(method, params, { sessionId: this.#session, timeoutMs });
  }

  /** Closes the tab, as a person closing it would (its page's connections drop). */
  async close(): Promise<void> {
    await this.#send("Page.close");
  }

  /** Loads `url` and waits for its load event. */
  async navigate(url: string | URL, timeoutMs = 30_000): Promise<void> {
    const loaded = new Promise<void>((resolve) =>
      this.#cdp.on("Page.loadEventFired", (_, s) => s === this.#session && resolve())
    );
    await this.#send("Page.navigate", { url: String(url) }, timeoutMs);
    await within(loaded, timeoutMs, `loading ${url}`);
  }

  /** The value of `expression` (awaited if a promise); its exception as an Error. */
  async evaluate<T>(expression: string, timeoutMs = 60_000): Promise<T> {
    const { result, exceptionDetails } = await this.#send<{
      result: { value?: T };
      exceptionDetails?: { exception?: { description?: string }; text: string };
    }>("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, timeoutMs);
    if (exceptionDetails) {
      const why = exceptionDetails.exception?.description ?? exceptionDetails.text;
      throw new Error(why.split("\n")[0]);
    }
    return result.value as T;
  }

  /**
   * Lets the page call `globalThis[name](text)`, which calls `handler(text)` here. Chromium may
   * deliver a call after the answer to an `evaluate` that made it: the page counts its calls, and
   * `arrived(n)` waits for the first n.
   */
  async expose(name: string, handler: (payload: string) => void): Promise<Binding> {
    let calls = 0;
    const waits = new Set<() => void>();
    this.#cdp.on("Runtime.bindingCalled", (p, s) => {
      if (s !== this.#session || p.name !== name) return;
      handler(String(p.payload));
      calls++;
      for (const wait of waits) wait();
    });
    await this.#send("Runtime.addBinding", { name });
    return {
      arrived: async (n, timeoutMs = 30_000) => {
        let wait = () => {};
        const all = new Promise<void>((resolve) => wait = () => calls >= n && resolve());
        wait(); // they may all be here already
        waits.add(wait);
        try {
          await within(all, timeoutMs, `${name}'s ${n} calls`);
        } finally {
          waits.delete(wait);
        }
      },
    };
  }

  /** A screenshot of the page, as PNG bytes. */
  async screenshot(): Promise<Uint8Array> {
    const { data } = await this.#send<{ data: string }>("Page.captureScreenshot", {
      format: "png",
      captureBeyondViewport: true,
    });
    return Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  }

  /** Chooses `files` (paths here) in the file input `selector`, as a person picking them would. */
  async setFiles(selector: string, files: string[]): Promise<void> {
    const { root } = await this.#send<{ root: { nodeId: number } }>("DOM.getDocument");
    const { nodeId } = await this.#send<{ nodeId: number }>("DOM.querySelector", {
      nodeId: root.nodeId,
      selector,
    });
    if (!nodeId) throw new Error(`the page has no ${selector}`);
    await this.#send("DOM.setFileInputFiles", { files, nodeId });
  }

  /** Saves the page's downloads into `dir` (the browser's setting). */
  async downloadsTo(dir: string): Promise<void> {
    await this.#cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir });
  }
}

/** A running headless Chromium. */
export class Chromium {
  readonly #guard: Deno.ChildProcess;
  readonly #cdp: Cdp;
  readonly #profile: string;

  private constructor(guard: Deno.ChildProcess, cdp: Cdp, profile: string) {
    this.#guard = guard;
    this.#cdp = cdp;
    this.#profile = profile;
  }

  /**
   * Starts Chromium (a ChromiumMissing error when there is none); `alsoRemove` are folders its
   * guard removes with the profile once it ends, however this process ends (the page's bundle).
   */
  static async launch(
    options: { timeoutMs?: number; alsoRemove?: string[] } = {},
  ): Promise<Chromium> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const profile = await Deno.makeTempDir({ prefix: "dccl-chromium-" });
    const guard = spawnGuard([
      "sh",
      "-c",
      GUARD,
      "sh",
      [profile, ...options.alsoRemove ?? []].join("\n"),
      CHROMIUM,
      ...FLAGS,
      `--user-data-dir=${profile}`,
    ]);
    const stderr = drainKeepingTail(guard.stderr);
    const cdp = new Cdp(guard.stdin, guard.stdout);
    const chromium = new Chromium(guard, cdp, profile);
    try {
      await cdp.send("Browser.getVersion", {}, { timeoutMs });
      return chromium;
    } catch (e) {
      const { code } = await chromium.close();
      if (code === 127) throw new ChromiumMissing();
      const why = (await stderr()).trim().slice(-300);
      throw new Error(`Chromium did not start: ${(e as Error).message}${why ? `: ${why}` : ""}`);
    }
  }

  /** The browser's private profile folder (removed when the browser ends). */
  get profile(): string {
    return this.#profile;
  }

  /** Opens a page at `url`, attached to. */
  async page(url: string | URL, timeoutMs = 30_000): Promise<ChromiumPage> {
    const { targetId } = await this.#cdp.send<{ targetId: string }>("Target.createTarget", {
      url: "about:blank",
    });
    const { sessionId } = await this.#cdp.send<{ sessionId: string }>("Target.attachToTarget", {
      targetId,
      flatten: true,
    });
    const page = new ChromiumPage(this.#cdp, sessionId);
    await this.#cdp.send("Page.enable", {}, { sessionId });
    await this.#cdp.send("Runtime.enable", {}, { sessionId });
    await page.navigate(url, timeoutMs);
    return page;
  }

  /**
   * Closes the pipe, which ends Chromium, and waits for the guard to clear its processes and
   * profile; a guard that has not finished in 10 s is killed and the profile removed here.
   * Resolves with how the guard (hence Chromium) ended.
   */
  async close(): Promise<Deno.CommandStatus> {
    await this.#cdp.close();
    let status: Deno.CommandStatus;
    try {
      status = await within(this.#guard.status, 10_000, "closing Chromium");
    } catch {
      try {
        this.#guard.kill("SIGKILL");
      } catch { /* already gone */ }
      status = await this.#guard.status;
    }
    await Deno.remove(this.#profile, { recursive: true }).catch(() => {});
    return status;
  }
}

/**
 * Starts the guard in a session of its own where `setsid` exists, so that a signal to this
 * process's group (a terminal's Ctrl-C, `kill -- -PGID`) leaves it to clean up.
 */
function spawnGuard(command: string[]): Deno.ChildProcess {
  const options = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
  try {
    return new Deno.Command("setsid", { args: command, ...options }).spawn();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    return new Deno.Command(command[0], { args: command.slice(1), ...options }).spawn();
  }
}

/** Reads `stream` to its end, keeping its last 4 KiB; the returned function awaits them. */
function drainKeepingTail(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  let tail = "";
  const done = (async () => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      tail = (tail + text).slice(-4096);
    }
  })().catch(() => {});
  return async () => {
    await within(done, 1000, "Chromium's stderr").catch(() => {});
    return tail;
  };
}
