/**
 * A group of Deno processes and browser tabs (`--tabs`): the join page's server and the group's
 * hub (deno/transports/websocket_hub.ts) in this process, `procs` Deno ranks as subprocesses
 * over the `websocket` transport, and a join link; each tab that opens it becomes one of the
 * ranks `procs` … `procs + tabs − 1`, in the order tabs join. With `threads` every process and
 * every tab is a host of that many ranks sharing memory (hierarchy.ts): a tab's workers. The token travels in the link's
 * fragment, which a browser never sends to a server. The group begins once every rank has
 * joined and linked; a tab that never comes is named when the join timeout ends, and a tab that
 * closes fails the group, named, as a process that dies does.
 * @module
 */

import {
  type HubEvent,
  launchProcesses,
  type ProcessesOptions,
  randomToken,
  serveHub,
  TAB_TRANSPORT,
} from "../../deno/mod.ts";
import type { RankGroup } from "../../core.ts";
import { DEFAULT_TIMEOUT_MS, type Supervisor } from "../../internal.ts";
import { PAGE_ENTRIES, servePage } from "./page_server.ts";
import type { TabTask } from "../../web/tab_task.ts";

/** Options of {@linkcode launchMixedGroup}. */
export interface MixedGroupOptions extends Omit<ProcessesOptions, "transport" | "bind" | "hub"> {
  /** Tabs to wait for (each `threads` ranks). */
  tabs: number;
  /**
   * What the tabs run: a rank program's path in the repository (the page's own, such as
   * `SWEEP_PROGRAM`, or one bundled for the run), and its arguments (the processes' unless told).
   */
  program: string;
  tabArgs?: unknown;
  /** Where the page, the hub and the processes listen. @default {"127.0.0.1"} */
  host?: string;
  /** Milliseconds every tab has to join. @default {the group's timeout} */
  joinMs?: number;
  /** Told the join link once it is served (the launcher prints it, or opens tabs on it). */
  onJoinLink?(link: URL): void | Promise<void>;
  /** Told what the hub sees (a tab joined, the group began). */
  onEvent?(event: HubEvent): void;
}

/** Starts a mixed group (see the module docs); `results` by rank, tabs' undefined. */
export function launchMixedGroup<T>(
  module: URL | string,
  options: MixedGroupOptions,
): RankGroup<T> {
  const { tabs, program, tabArgs, host = "127.0.0.1", onJoinLink, onEvent, ...rest } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const threads = options.threads ?? 1;
  const token = randomToken();
  let group: RankGroup<unknown> | undefined;
  const results = (async () => {
    const extraEntries = PAGE_ENTRIES.includes(program) ? [] : [program];
    const page = await servePage({ hostname: host, extraEntries });
    let supervisor: Supervisor<unknown> | undefined;
    const hub = serveHub({
      size: (options.size + tabs) * threads,
      processes: options.size * threads,
      threads,
      token,
      hostname: host,
      joinMs: options.joinMs ?? timeoutMs,
      timeoutMs,
      origins: page.origins,
      task: { program, args: tabArgs ?? options.args } satisfies TabTask,
      onEvent(e) {
        onEvent?.(e);
        if (e.kind === "ended") {
          supervisor?.ended(
            e.rank,
            e.end.ok ? { status: "ok" } : {
              status: "failed",
              reason: e.end.reason ?? "it failed",
              blames: e.end.failedRank === e.rank ? undefined : e.end.failedRank,
            },
          );
        } else if (e.kind === "lost") {
          supervisor?.ended(e.rank, { status: "failed", reason: e.reason });
        } else if (e.kind === "failed" && e.rank >= options.size * threads) {
          supervisor?.ended(e.rank, { status: "failed", reason: e.reason });
        }
      },
    });
    const link = new URL(`/join#${new URLSearchParams({ hub: hub.url, token })}`, page.url);
    try {
      await onJoinLink?.(link);
    } catch (e) {
      await hub.close();
      await page.close();
      throw e;
    }
    group = launchProcesses(module, {
      ...rest,
      transport: TAB_TRANSPORT,
      bind: host,
      hub: {
        port: hub.port,
        token,
        others: tabs * threads,
        watch: (s) => supervisor = s,
        async stop() {
          await hub.close();
          await page.close();
        },
      },
    });
    return await group.results as T[];
  })();
  return { results, kill: (rank) => group?.kill(rank) };
}

/**
 * The default `onJoinLink`: one line on stderr with the link, and who can reach it from where
 * the group listens.
 */
export function printJoinLink(link: URL, tabs: number, host: string, joinMs: number): void {
  const who = host === "127.0.0.1" || host === "::1"
    ? "tabs on this machine only"
    : `any machine that reaches ${host} (the link's token is the only key: share it only in the room)`;
  console.error(
    `dccl: waiting ${joinMs / 1000} s for ${tabs} tab${tabs > 1 ? "s" : ""} to join (${who}): ` +
      `open ${link.href}`,
  );
}
