/**
 * Headless Chromium driven over the DevTools protocol: started with `--remote-debugging-port=0`
 * (its `ws://` address read from stderr), a page opened and attached to, expressions evaluated
 * with `awaitPromise`, bindings the page calls back through, screenshots and downloads. Every
 * step has a wall-clock limit; closing kills the browser by its PID and removes its profile.
 * Root needs `--no-sandbox`; WebGPU runs on SwiftShader with the flags below.
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
  "--remote-debugging-port=0",
];

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

/** A DevTools protocol connection (the browser's). */
class Cdp {
  readonly #ws: WebSocket;
  #next = 1;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly #handlers = new Map<string, Set<Handler>>();
  #closed?: Error;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = ({ data }) => {
      const m = JSON.parse(String(data));
      if (m.id !== undefined) {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        if (m.error) {
          p?.reject(new Error(`${m.error.message}${m.error.data ? `: ${m.error.data}` : ""}`));
        } else p?.resolve(m.result);
      } else {
        for (const h of this.#handlers.get(m.method) ?? []) h(m.params, m.sessionId);
      }
    };
    ws.onclose = () => {
      this.#closed = new Error("the browser closed its DevTools connection");
      for (const p of this.#pending.values()) p.reject(this.#closed);
      this.#pending.clear();
    };
  }

  /** Connects to `url`. */
  static async open(url: string, timeoutMs: number): Promise<Cdp> {
    const ws = new WebSocket(url);
    await within(
      new Promise((resolve, reject) => {
        ws.onopen = resolve;
        ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
      }),
      timeoutMs,
      "connecting to the browser",
    );
    return new Cdp(ws);
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
    this.#ws.send(JSON.stringify({ id, method, params, sessionId: options.sessionId }));
    return within(reply, options.timeoutMs ?? 30_000, method);
  }

  /** Calls `handler` on every `method` event. */
  on(method: string, handler: Handler): void {
    const set = this.#handlers.get(method) ?? new Set();
    set.add(handler);
    this.#handlers.set(method, set);
  }

  close(): void {
    this.#ws.close();
  }
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

  /** Lets the page call `globalThis[name](text)`, which calls `handler(text)` here. */
  async expose(name: string, handler: (payload: string) => void): Promise<void> {
    this.#cdp.on("Runtime.bindingCalled", (p, s) => {
      if (s === this.#session && p.name === name) handler(String(p.payload));
    });
    await this.#send("Runtime.addBinding", { name });
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
  readonly #child: Deno.ChildProcess;
  readonly #cdp: Cdp;
  readonly #profile: string;

  private constructor(child: Deno.ChildProcess, cdp: Cdp, profile: string) {
    this.#child = child;
    this.#cdp = cdp;
    this.#profile = profile;
  }

  /** Starts Chromium (a ChromiumMissing error when there is none). */
  static async launch(timeoutMs = 30_000): Promise<Chromium> {
    const profile = await Deno.makeTempDir({ prefix: "dccl-chromium-" });
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(CHROMIUM, {
        args: [...FLAGS, `--user-data-dir=${profile}`, "about:blank"],
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
    } catch (e) {
      await Deno.remove(profile, { recursive: true }).catch(() => {});
      if (e instanceof Deno.errors.NotFound) throw new ChromiumMissing();
      throw e;
    }
    try {
      const address = await within(devtoolsAddress(child.stderr), timeoutMs, "starting Chromium");
      return new Chromium(child, await Cdp.open(address, timeoutMs), profile);
    } catch (e) {
      killQuietly(child);
      await child.status;
      await Deno.remove(profile, { recursive: true }).catch(() => {});
      throw e;
    }
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

  /** Kills the browser by its PID and removes its profile. */
  async close(): Promise<void> {
    this.#cdp.close();
    killQuietly(this.#child);
    await this.#child.status;
    await Deno.remove(this.#profile, { recursive: true }).catch(() => {});
  }
}

function killQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch { /* already gone */ }
}

/** The `ws://` address Chromium prints on stderr; the rest of stderr is drained. */
async function devtoolsAddress(stderr: ReadableStream<Uint8Array<ArrayBuffer>>): Promise<string> {
  const lines = stderr.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`Chromium exited before it listened: ${text.trim().slice(-300)}`);
    text += value;
    const found = text.match(/DevTools listening on (ws:\/\/\S+)/);
    if (found) {
      // Keep reading, so that a chatty browser never blocks on a full pipe.
      (async () => {
        while (!(await lines.read()).done) { /* drained */ }
      })().catch(() => {});
      return found[1];
    }
  }
}
