/**
 * The page's local server: on 127.0.0.1 only, it serves web/index.html with the two headers that
 * make a page cross-origin isolated (`Cross-Origin-Opener-Policy: same-origin`,
 * `Cross-Origin-Embedder-Policy: require-corp`; SharedArrayBuffer, hence every rank, needs them),
 * the same page without them at `/plain/` (to show what a page that is not isolated says), the
 * page's bundle under `/bundle/` (built here with `deno bundle --platform browser
 * --code-splitting`: the page, the ranks' entries and their rank programs share chunks, so a
 * worker's library is one module graph), and MNIST's four files under `/mnist/`.
 * @module
 */

import { MNIST_FILES } from "../../trainer/mnist.ts";
import { packagedMnistDir } from "../trainer/mnist_folder.ts";

const ROOT = new URL("../../", import.meta.url);

/** What the bundle holds: the page, the ranks' entries and the rank programs the page starts. */
export const PAGE_ENTRIES: readonly string[] = [
  "web/page/page.ts",
  "web/harness_rank.ts",
  "web/train_rank.ts",
  "primitives/launch/worker_rank.ts",
  "primitives/launch/thread_rank.ts",
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
  /** Stops the server and removes the bundle it served. */
  close(): Promise<void>;
}

/** Options of {@linkcode servePage}. */
export interface PageServerOptions {
  /** The port on 127.0.0.1 (0: any free one). @default {0} */
  port?: number;
  /** Extra bundle entries (tests' rank programs), paths from the repository root. */
  extraEntries?: readonly string[];
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
function headers(type: string, isolated: boolean): Headers {
  const h = new Headers({
    "content-type": type,
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
  });
  if (isolated) {
    h.set("cross-origin-opener-policy", "same-origin");
    h.set("cross-origin-embedder-policy", "require-corp");
  }
  return h;
}

/** Serves the page on 127.0.0.1 (see the module docs). */
export async function servePage(options: PageServerOptions = {}): Promise<PageServer> {
  const bundle = await bundlePage(options.extraEntries);
  const mnist = await packagedMnistDir();
  const page = await Deno.readFile(new URL("web/index.html", ROOT));
  const mnistNames = new Set(Object.values(MNIST_FILES).flatMap((n) => [n, `${n}.gz`]));
  const file = async (path: string, type: string, isolated = true) => {
    try {
      return new Response(await Deno.readFile(path), { headers: headers(type, isolated) });
    } catch {
      return new Response("not found", { status: 404, headers: headers("text/plain", false) });
    }
  };
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve(
      { hostname: "127.0.0.1", port: options.port ?? 0, onListen: () => {} },
      route,
    );
  } catch (e) {
    await Deno.remove(bundle, { recursive: true }).catch(() => {});
    if (e instanceof Deno.errors.AddrInUse) {
      throw new Error(
        `port ${options.port} on 127.0.0.1 is in use: choose another (--port 0: any)`,
      );
    }
    throw e;
  }
  return {
    url: new URL(`http://127.0.0.1:${server.addr.port}/`),
    async close() {
      await server.shutdown();
      await Deno.remove(bundle, { recursive: true }).catch(() => {});
    },
  };

  function route(request: Request): Response | Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === "/" || path === "/index.html") {
      return new Response(page, { headers: headers(TYPES.html, true) });
    }
    if (path === "/plain/") return new Response(page, { headers: headers(TYPES.html, false) });
    const bundled = path.match(/^\/bundle\/([\w./-]+\.(js|map))$/);
    if (bundled && !bundled[1].includes("..")) {
      return file(`${bundle}/${bundled[1]}`, TYPES[bundled[2]]);
    }
    const data = path.match(/^\/mnist\/([\w.-]+)$/);
    if (data && mnistNames.has(data[1])) {
      return file(`${mnist}/${data[1]}`, "application/octet-stream");
    }
    return new Response("not found", { status: 404, headers: headers("text/plain", false) });
  }
}
