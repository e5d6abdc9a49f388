/**
 * The join page's script (web/join.html): reads the hub and the token from the link's fragment
 * (never sent to a server), reserves this tab's ranks at the hub, starts its one rank
 * (web/tab_group_rank.ts) or its host of several, workers sharing memory (web/tab_host_rank.ts),
 * and shows the group, this tab's ranks, how they ended, and the trainer's loss and accuracy. What it
 * shows is also on `globalThis.dcclJoin`, for `deno task browser` and the tests.
 * @module
 */

import {
  DEFAULT_TIMEOUT_MS,
  launchWorkers,
  linkBetween,
  type RankKind,
  type Reservation,
  reserveTabHost,
  WEBSOCKET_FACTS,
} from "../../internal.ts";
import { pageBundle } from "../runs.ts";
import type { GroupRankMessage, JoinRequest } from "../tab_group_rank.ts";
import type { JoinedMessage, TabHostArgs } from "../tab_host_rank.ts";
import type { TrainMessage } from "../tab_train_rank.ts";
import type { JoinState, TabTask } from "../tab_task.ts";

const status = document.getElementById("status")!;
const params = new URLSearchParams(location.hash.slice(1));
const hub = params.get("hub"), token = params.get("token");
let ended!: () => void;
const state: JoinState = { status: "joining", ended: new Promise((r) => ended = r) };
(globalThis as unknown as { dcclJoin: JoinState }).dcclJoin = state;

function show(text: string, failed = false): void {
  status.textContent = text;
  status.className = failed ? "failed" : "";
}

/** The group's ranks, kinds and links, this tab's in bold. */
function showGroup(reserved: Reservation): void {
  const members: RankKind[] = Array.from(
    { length: reserved.size },
    (_, r) => r < reserved.processes ? "process" : "tab",
  );
  const me = reserved.ranks[0];
  const body = document.querySelector("#group tbody")!;
  body.replaceChildren(...members.map((kind, r) => {
    const row = document.createElement("tr");
    const mine = reserved.ranks.includes(r);
    if (mine) row.className = "me";
    const link = mine ? "this tab" : linkBetween({ members, threads: reserved.threads }, [me, r]);
    for (const text of [String(r), kind, link]) {
      row.append(Object.assign(document.createElement("td"), { textContent: text }));
    }
    return row;
  }));
  document.getElementById("group")!.hidden = false;
}

function showTraining(message: TrainMessage): void {
  const p = document.getElementById("training")!;
  p.hidden = false;
  p.textContent = message.type === "progress"
    ? `epoch ${message.epoch + 1}: step ${message.step} of ${message.steps}` +
      (message.loss === undefined ? "" : `, loss ${message.loss.toFixed(4)}`)
    : `epoch ${message.row.epoch}: loss ${message.row.loss.toFixed(4)}, test accuracy ` +
      `${(message.row.test_acc * 100).toFixed(2)}%`;
}

function failed(error: string): void {
  state.status = "failed";
  state.error = error;
}

/** The tab's one rank, in a worker: what it returned. */
function oneRank(rank: number, channel: string, running: () => void): Promise<unknown[]> {
  const worker = new Worker(new URL("/bundle/web/tab_group_rank.js", location.href), {
    type: "module",
  });
  const about = { userAgent: navigator.userAgent, cores: navigator.hardwareConcurrency };
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }: MessageEvent<GroupRankMessage>) => {
      if (data.type === "joined") running();
      else if (data.type === "report") {
        const r = data.report;
        if (r.type === "done") resolve([r.result]);
        else if (r.type === "error") reject(new Error(`${r.name}: ${r.message}`));
      } else showTraining(data);
    };
    worker.postMessage({ hub: hub!, token: token!, rank, about, channel } satisfies JoinRequest);
  });
}

/** The tab's host of `threads` ranks, workers sharing memory (hierarchy.ts): what each returned. */
function hostRanks(reserved: Reservation, channel: string): Promise<unknown[]> {
  const { hostname, port } = new URL(hub!);
  const bundle = pageBundle();
  const args: TabHostArgs = { task: reserved.task as TabTask, channel };
  return launchWorkers(bundle.hostRank, {
    size: reserved.threads,
    timeoutMs: reserved.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    args,
    runtime: bundle.tabRuntime.href,
    rankEntries: bundle,
    host: {
      hosts: reserved.size / reserved.threads,
      threads: reserved.threads,
      host: reserved.ranks[0] / reserved.threads,
      transport: WEBSOCKET_FACTS.name,
      mesh: {
        masterAddr: hostname.replace(/^\[|\]$/g, ""),
        masterPort: Number(port),
        token: token!,
      },
    },
  }).results;
}

/** Reserves this tab's ranks at the hub, runs them, and shows how they ended. */
async function join(): Promise<void> {
  let page: WebSocket, reserved: Reservation;
  try {
    ({ page, reserved } = await reserveTabHost({
      hub: hub!,
      token: token!,
      timeoutMs: DEFAULT_TIMEOUT_MS,
    }));
  } catch (e) {
    failed((e as Error).message);
    show(state.error!, true);
    return ended();
  }
  const { ranks, size } = reserved;
  const which = ranks.length === 1 ? `rank ${ranks[0]}` : `ranks ${ranks[0]}–${ranks.at(-1)}`;
  Object.assign(state, { rank: ranks[0], ranks, size });
  showGroup(reserved);
  const channel = new BroadcastChannel(`dccl-join-${crypto.randomUUID()}`);
  const running = () => {
    if (state.status !== "joining") return;
    state.status = "running";
    show(`This tab is ${which} of ${size}. Running…`);
  };
  channel.onmessage = (e: MessageEvent<TrainMessage | JoinedMessage>) =>
    e.data.type === "joined" ? running() : showTraining(e.data);
  try {
    const results = reserved.threads === 1
      ? await oneRank(ranks[0], channel.name, running)
      : await hostRanks(reserved, channel.name);
    Object.assign(state, { status: "done", results, result: results[0] });
    show(`This tab's ${which} finished: the group's run is done.`);
  } catch (e) {
    failed((e as Error).message);
    show(`This tab's ${which} stopped: ${state.error}`, true);
  }
  channel.close();
  page.close();
  ended();
}

if (!hub || !token) {
  failed("this link has no group in it: open the join link the launcher printed, whole");
  show(state.error!, true);
  ended();
} else if (!crossOriginIsolated) {
  failed("this page is not cross-origin isolated, so it has no shared memory for its rank");
  show(state.error!, true);
  ended();
} else join();
