/**
 * `deno task serve [--port P]`: serves the page (web/index.html and its bundle) on 127.0.0.1,
 * cross-origin isolated, until Ctrl-C; prints the address (docs/browser.md).
 * @module
 */

import { servePage } from "./browser/page_server.ts";
import { defineFlags } from "./common/flags.ts";
import { type Task, taskMain } from "./common/task.ts";

const FLAGS = defineFlags({
  port: {
    help: "port on 127.0.0.1 (0: any free one)",
    kind: "integer",
    min: 0,
    max: 65535,
    default: 8000,
  },
});

const SERVE: Task<{ port: number }, typeof FLAGS> = {
  name: "serve",
  summary: "Serves the page that runs dccl in a browser tab, on 127.0.0.1.",
  flags: FLAGS,
  plan: ({ port }) => ({ port }),
  async run({ port }, signal) {
    const server = await servePage({ port });
    console.log(`dccl serve: ${server.url} (Ctrl-C stops)`);
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    await server.close();
    throw signal.reason;
  },
};

Deno.exit(await taskMain(SERVE, Deno.args));
