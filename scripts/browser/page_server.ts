/**
 * The page's local server: on 127.0.0.1 only, it serves web/index.html with the two headers that
 * make a page cross-origin isolated (`Cross-Origin-Opener-Policy: same-origin`,
 * `Cross-Origin-Embedder-Policy: require-corp`; SharedArrayBuffer, hence every rank, needs them),
 * the same page without them at `/plain/` (to show what a page that is not isolated says), the
 * page's bundle under `/bundle/` (built here with `deno bundle --platform browser
 * --code-splitting`: the page, the ranks' entries and their rank programs share chunks, so a
 * worker's library is one module graph), and MNIST's four files under `/mnist/`. It answers GET
 * and HEAD only (405 otherwise), and only to Host 127.0.0.1 or localhost with its port, in any
 * case (403 otherwise: no DNS rebinding); files are streamed, so memory stays flat in the number
 * of clients; a request head has 10 s to arrive and at most 128 connections are open at once
 * (http_server.ts); what it cannot serve it says in its log (docs/security.md).
 * @module
 */

import { MNIST_FILES } from "../../trainer/mnist.ts";
import { packagedMnistDir } from "../../deno/mod.ts";
import {
  type HttpRequest,
  type HttpResponse,
  type HttpServer,
  plainAnswer,
  serveHttp,
} from "./http_server.ts";

const ROOT = new URL("../../", import.meta.url);

/** What the bundle holds: the page, the ranks' entries and the rank programs the page starts. */
export const PAGE_ENTRIES: readonly string[] = [
  "web/page/page.ts",
  "web/tab_sweep_rank.ts",
  "web/tab_train_rank.ts",
  "web/page/join.ts",
  "web/tab_group_rank.ts",
  "web/tab_host_rank.ts",
  "web/tab_runtime.ts",
  "primitives/launch/worker_rank.ts",
  "primitives/launch/thread_rank.ts",
  "bench/limits/probe_worker.ts",
];

/** Builds the page's bundle (and `extra` entries, paths from the repository root) into a folder. */
export async function bundlePage(extra: readonly string[] = []): Promise<string> {
  const outdir = await Deno.makeTempDir({ prefix: "dccl-page-" });
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      "--code-splitting",
      "--format",
      "esm",
      "--outdir",
      outdir,
      ...PAGE_ENTRIES,
      ...extra,
    ],
    cwd: ROOT,
  }).output();
  if (!success) {
    await Deno.remove(outdir, { recursive: true }).catch(() => {});
    throw new Error(`deno bundle failed: ${new TextDecoder().decode(stderr).trim()}`);
  }
  return outdir;
}

/** A running page server. */
export interface PageServer {
  /** The isolated page's address. */
  url: URL;
  /** Every origin its pages have (each name it answers to). */
  origins: string[];
  /** The folder of the bundle it serves (removed when it closes). */
  bundle: string;
  /** Stops the server and removes the bundle it served. */
  close(): Promise<void>;
}

/** Options of {@linkcode servePage}. */
export interface PageServerOptions {
  /** The address it listens on (another than loopback serves a LAN). @default {"127.0.0.1"} */
  hostname?: string;
  /** The port (0: any free one). @default {0} */
  port?: number;
  /** Extra bundle entries (tests' rank programs), paths from the repository root. */
  extraEntries?: readonly string[];
  /** Where the server says what went wrong (a missing file, a slow client). @default {stderr} */
  log?(line: string): void;
}

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  map: "application/json",
};

/**
 * What every response carries, and the isolating pair (on the page, and on the scripts: a worker
 * an isolated page starts must be served isolating too).
 */
function headers(type: string, isolated: boolean): Record<string, string> {
  return {
    "content-type": type,
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
    ...(isolated && {
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
    }),
  };
}

/** Serves the page on 127.0.0.1 (see the module docs). */
export async function servePage(options: PageServerOptions = {}): Promise<PageServer> {
  const log = options.log ?? ((line: string) => console.error(`dccl page server: ${line}`));
  const bundle = await bundlePage(options.extraEntries);
  const mnist = await packagedMnistDir();
  const page = await Deno.readFile(new URL("web/index.html", ROOT));
  const join = await Deno.readFile(new URL("web/join.html", ROOT));
  const hostname = options.hostname ?? "127.0.0.1";
  const mnistNames = new Set(Object.values(MNIST_FILES).flatMap((n) => [n, `${n}.gz`]));
  let server: HttpServer;
  try {
    server = serveHttp({ hostname, port: options.port ?? 0, handler: answer, log });
  } catch (e) {
    await Deno.remove(bundle, { recursive: true }).catch(() => {});
    if (e instanceof Deno.errors.AddrInUse) {
      throw new Error(
        `port ${options.port} on ${hostname} is in use: choose another (--port 0: any)`,
      );
    }
    throw e;
  }
  const port = server.addr.port;
  const names = hostname === "127.0.0.1" ? ["127.0.0.1", "localhost"] : [hostname];
  const hosts = new Set(names.flatMap((h) => port === 80 ? [h, `${h}:80`] : [`${h}:${port}`]));
  return {
    url: new URL(`http://${hostname}:${port}/`),
    origins: [...hosts].map((h) => `http://${h}`),
    bundle,
    async close() {
      await server.close();
      await Deno.remove(bundle, { recursive: true }).catch(() => {});
    },
  };

  /** What `request` gets, before its path is looked at: only GET and HEAD, to our own names. */
  async function answer(request: HttpRequest): Promise<HttpResponse> {
    // Host names are case-insensitive (RFC 9110 §4.2.3).
    if (!hosts.has((request.headers.get("host") ?? "").toLowerCase())) {
      // Another name for this address is a DNS rebinding: a page of another site reading ours.
      return plainAnswer(403, `Host is not accepted: expected ${[...hosts].join(" or ")}`);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return plainAnswer(405, "only GET and HEAD are answered", { allow: "GET, HEAD" });
    }
    const path = request.target.split("?")[0];
    const served = await route(path);
    if (!served) {
      log(`404 ${path.slice(0, 200)}: no such file is served`);
      return plainAnswer(404, "not found");
    }
    return {
      status: 200,
      headers: headers(served.type, served.isolated),
      length: served.length,
      body: served.file?.readable ?? served.bytes,
    };
  }

  /** The file at `path`, opened to be streamed (or the page's bytes); undefined when none. */
  async function route(path: string): Promise<Served> {
    if (path === "/" || path === "/index.html") return inMemory(page, true);
    if (path === "/plain/") return inMemory(page, false);
    if (path === "/join") return inMemory(join, true);
    const bundled = path.match(/^\/bundle\/([\w./-]+\.(js|map))$/);
    if (bundled && !bundled[1].includes("..")) {
      return await opened(`${bundle}/${bundled[1]}`, TYPES[bundled[2]]);
    }
    const data = path.match(/^\/mnist\/([\w.-]+)$/);
    if (data && mnistNames.has(data[1])) {
      return await opened(`${mnist}/${data[1]}`, "application/octet-stream");
    }
    return undefined;
  }
}

/** A response's body and how to label it. */
type Served =
  | {
    type: string;
    isolated: boolean;
    length: number;
    bytes?: Uint8Array<ArrayBuffer>;
    file?: Deno.FsFile;
  }
  | undefined;

function inMemory(bytes: Uint8Array<ArrayBuffer>, isolated: boolean): Served {
  return { type: TYPES.html, isolated, length: bytes.length, bytes };
}

/** `path` opened for streaming, so memory stays flat however many clients download it. */
async function opened(path: string, type: string): Promise<Served> {
  let file: Deno.FsFile | undefined;
  try {
    file = await Deno.open(path);
    const { size, isFile } = await file.stat();
    if (!isFile) throw new Deno.errors.NotFound(path);
    return { type, isolated: true, length: size, file };
  } catch {
    file?.close();
    return undefined;
  }
}
