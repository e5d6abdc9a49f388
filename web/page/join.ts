/**
 * The join page's script (web/join.html): reads the hub and the token from the link's fragment
 * (never sent to a server), starts this tab's rank (web/tab_group_rank.ts) in a worker, and shows
 * the group, this tab's rank, how it ended, and the trainer's running loss and accuracy. What it
 * shows is also on `globalThis.dcclJoin`, for `deno task browser` and the tests.
 * @module
 */

import { type GroupTable, linkKind } from "../../internal.ts";
import type { GroupRankMessage, JoinRequest } from "../tab_group_rank.ts";
import type { TrainMessage } from "../tab_train_rank.ts";
import type { JoinState } from "../tab_task.ts";

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

function showGroup(table: GroupTable): void {
  const body = document.querySelector("#group tbody")!;
  body.replaceChildren(...table.members.map((m, r) => {
    const row = document.createElement("tr");
    if (r === table.rank) row.className = "me";
    const link = r === table.rank ? "this tab" : linkKind(table.members[table.rank].kind, m.kind);
    for (const text of [String(r), m.kind, link]) {
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

if (!hub || !token) {
  state.status = "failed";
  state.error = "this link has no group in it: open the join link the launcher printed, whole";
  show(state.error, true);
  ended();
} else if (!crossOriginIsolated) {
  state.status = "failed";
  state.error = "this page is not cross-origin isolated, so it has no shared memory for its rank";
  show(state.error, true);
  ended();
} else {
  const channel = new BroadcastChannel(`dccl-join-${crypto.randomUUID()}`);
  channel.onmessage = (e: MessageEvent<TrainMessage>) => showTraining(e.data);
  const worker = new Worker(new URL("/bundle/web/tab_group_rank.js", location.href), {
    type: "module",
  });
  worker.onmessage = ({ data }: MessageEvent<GroupRankMessage>) => {
    if (data.type === "joined") {
      Object.assign(state, { status: "running", rank: data.table.rank, size: data.table.size });
      show(`This tab is rank ${data.table.rank} of ${data.table.size}. Running…`);
      showGroup(data.table);
    } else if (data.type === "report") {
      const r = data.report;
      if (r.type === "done") {
        state.status = "done";
        state.result = r.result;
        show(`Rank ${state.rank} finished: the group's run is done.`);
      } else if (r.type === "error") {
        state.status = "failed";
        state.error = `${r.name}: ${r.message}`;
        show(`Rank ${state.rank ?? "?"} stopped: ${state.error}`, true);
      } else return;
      channel.close();
      ended();
    } else showTraining(data);
  };
  const about = { userAgent: navigator.userAgent, cores: navigator.hardwareConcurrency };
  worker.postMessage({ hub, token, about, channel: channel.name } satisfies JoinRequest);
}
