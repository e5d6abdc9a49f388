/**
 * The hub of a `websocket` group (primitives/transports/websocket.ts): where every rank joins
 * (websocket_join.ts) and, once the group has begun, the relay between tabs. Process ranks claim
 * their rank. A tab's page first reserves a host, the first free one in the order pages come: the
 * next `threads` tab ranks, which its workers then claim (hierarchy.ts). When every rank has
 * joined it sends each the table; when every rank has linked, go. A rank that leaves before the
 * table frees its place, and a page that leaves frees its host (a tab reloaded); after it, the
 * group fails naming it, and a rank that has not joined when the join timeout ends is named to
 * every other. It runs in the launcher of a
 * mixed group (scripts/browser/mixed_group.ts), or in rank 0 of a group of processes only.
 * @module
 */

import type {
  GroupTable,
  Member,
  Reservation,
} from "../../primitives/transports/websocket_join.ts";
import { CLOSE_FAILED, CLOSE_NORMAL, RELAY_BYTES } from "../../primitives/transports/websocket.ts";
import { checkUpgrade, hostNames, refuse, upgradeRules } from "./websocket_upgrade.ts";

/** Options of {@linkcode serveHub}. */
export interface HubOptions {
  /** Ranks in the group. */
  size: number;
  /** Ranks 0 … processes−1 are processes; the rest are tabs. */
  processes: number;
  /** Ranks each host runs: a tab's page reserves that many (hierarchy.ts). @default {1} */
  threads?: number;
  /** The run's token, which every upgrade must present. */
  token: string;
  /** Where it listens. @default {"127.0.0.1"} */
  hostname?: string;
  /** Its port (0: any free one). @default {0} */
  port?: number;
  /** Milliseconds every rank has to join. */
  joinMs: number;
  /** The group's timeout, which every rank's transport takes. */
  timeoutMs?: number;
  /** The join page's origins, which tabs come from. */
  origins?: string[];
  /** What tabs run, sent in their table. */
  task?: unknown;
  /** Hears what happens to the group (a tab joined, a rank left, the group failed). */
  onEvent?(event: HubEvent): void;
}

/** What the hub saw happen. */
export type HubEvent =
  | { kind: "joined"; rank: number; member: Member; about?: unknown }
  | { kind: "left"; rank: number; before: "table" }
  | { kind: "began" }
  | { kind: "failed"; rank: number; reason: string; timeout: boolean }
  | { kind: "ended"; rank: number; end: TabEnd }
  | { kind: "lost"; rank: number; reason: string };

/** How a tab's rank ended, as its transport closed the hub's connection. */
export interface TabEnd {
  /** Whether it finished (its transport closed cleanly). */
  ok: boolean;
  /** The rank its failure names. */
  failedRank?: number;
  /** Why it failed. */
  reason?: string;
}

/** A tab's end, from the close its transport sent; undefined when it just went away. */
function tabEnd(e: CloseEvent): TabEnd | undefined {
  if (e.code === CLOSE_NORMAL) return { ok: true };
  if (e.code >= CLOSE_FAILED && e.code < CLOSE_FAILED + 1000) {
    return { ok: false, failedRank: e.code - CLOSE_FAILED, reason: e.reason };
  }
  return undefined;
}

/** A running hub. */
export interface Hub {
  /** Its port. */
  port: number;
  /** Where ranks join it (`ws://host:port/join`). */
  url: string;
  /** Stops it and closes every connection. */
  close(): Promise<void>;
}

interface Joined {
  socket: WebSocket;
  member?: Member;
  linked?: boolean;
}

/** Serves the hub (see the module docs). */
export function serveHub(o: HubOptions): Hub {
  const hostname = o.hostname ?? "127.0.0.1";
  const threads = o.threads ?? 1;
  const ranks: (Joined | undefined)[] = Array.from({ length: o.size }, () => undefined);
  // The page holding each tab host's ranks (tab rank r is on host ⌊(r − processes) / threads⌋).
  const tabHosts: (WebSocket | undefined)[] = new Array((o.size - o.processes) / threads);
  const tabHostOf = (rank: number) => Math.floor((rank - o.processes) / threads);
  let phase: "joining" | "linking" | "running" | "failed" = "joining";
  const event = (e: HubEvent) => o.onEvent?.(e);

  const server = Deno.serve({ hostname, port: o.port ?? 0, onListen() {} }, (request) => {
    if (new URL(request.url).pathname !== "/join") return refuse(404, "ranks join at /join");
    const checked = checkUpgrade(request, rules);
    if (checked instanceof Response) return checked;
    if (phase !== "joining") return refuse(409, "the group has begun: no rank joins it now");
    const rank = checked.rank;
    if (rank === undefined) return reserve(request, checked.protocol);
    if (ranks[rank] || (rank >= o.processes && !tabHosts[tabHostOf(rank)])) {
      return refuse(409, `rank ${rank} is not a free rank of this group, or of a tab's page`);
    }
    const { socket, response } = Deno.upgradeWebSocket(request, { protocol: checked.protocol });
    const joined: Joined = { socket };
    ranks[rank] = joined;
    socket.binaryType = "arraybuffer";
    socket.onmessage = (e) => onMessage(rank, joined, e.data);
    socket.onclose = (e) => onClose(rank, joined, e);
    return response;
  });
  const port = server.addr.port;
  const rules = upgradeRules(hostNames(hostname, port), o.token, o.size, o.origins);
  const deadline = setTimeout(() => {
    if (phase !== "joining" && phase !== "linking") return;
    const missing = ranks.findIndex((r) => phase === "joining" ? !r?.member : !r?.linked);
    const what = o.size > o.processes && missing >= o.processes ? "tab " : "";
    fail(
      missing,
      `${what}rank ${missing} never ${phase === "joining" ? "joined" : "linked"} within ` +
        `${o.joinMs / 1000} s`,
      true,
    );
  }, o.joinMs);

  /** A tab's page: its host's ranks are held for its workers while it stays. */
  function reserve(request: Request, protocol: string): Response {
    const host = tabHosts.findIndex((page) => !page);
    if (host < 0) return refuse(409, "every tab's place in the group is taken");
    const { socket, response } = Deno.upgradeWebSocket(request, { protocol });
    tabHosts[host] = socket;
    const first = o.processes + host * threads;
    const reserved: Reservation = {
      ranks: Array.from({ length: threads }, (_, t) => first + t),
      size: o.size,
      processes: o.processes,
      threads,
      task: o.task,
      timeoutMs: o.timeoutMs,
    };
    socket.onopen = () => socket.send(JSON.stringify({ reserved }));
    socket.onmessage = () => socket.close(4400, "a page says nothing to the hub");
    socket.onclose = () => {
      if (phase !== "joining" || tabHosts[host] !== socket) return;
      tabHosts[host] = undefined;
      // Its workers went with it; a rank still open here is closed, so the host is free again.
      for (const r of reserved.ranks) {
        const joined = ranks[r];
        ranks[r] = undefined;
        joined?.socket.close(4409, "its page left");
        if (joined?.member) event({ kind: "left", rank: r, before: "table" });
      }
    };
    return response;
  }

  function send(rank: number, message: unknown): void {
    const s = ranks[rank]?.socket;
    if (s?.readyState === WebSocket.OPEN) s.send(JSON.stringify(message));
  }

  function fail(rank: number, reason: string, timeout: boolean): void {
    if (phase === "failed") return;
    phase = "failed";
    clearTimeout(deadline);
    event({ kind: "failed", rank, reason, timeout });
    for (let r = 0; r < o.size; r++) if (r !== rank) send(r, { fail: { rank, reason, timeout } });
  }

  function onMessage(rank: number, joined: Joined, data: ArrayBuffer | string): void {
    if (phase === "running") return relay(rank, data);
    const said = typeof data === "string" ? parse(data) : undefined;
    if (said?.join && !joined.member) {
      const url = typeof said.join.url === "string" ? said.join.url : undefined;
      joined.member = rank < o.processes ? { kind: "process", url } : { kind: "tab" };
      event({ kind: "joined", rank, member: joined.member, about: said.join.about });
      if (ranks.every((r) => r?.member)) {
        phase = "linking";
        const members = ranks.map((r) => r!.member!);
        for (let r = 0; r < o.size; r++) {
          const table: GroupTable = {
            rank: r,
            size: o.size,
            members,
            origins: o.origins,
            timeoutMs: o.timeoutMs,
            task: members[r].kind === "tab" ? o.task : undefined,
          };
          send(r, { table });
        }
      }
    } else if (said?.linked && phase === "linking") {
      joined.linked = true;
      if (ranks.every((r) => r?.linked)) {
        phase = "running";
        clearTimeout(deadline);
        event({ kind: "began" });
        for (let r = 0; r < o.size; r++) send(r, { go: true });
      }
    } else socketProblem(joined, "a message out of turn");
  }

  /** A running group's message: relayed to its tab, or a tab's end. */
  function relay(from: number, data: ArrayBuffer | string): void {
    if (typeof data !== "string") {
      const to = data.byteLength >= RELAY_BYTES ? new DataView(data).getUint32(0, true) : -1;
      const target = ranks[to];
      if (to === from || ranks[from]?.member?.kind !== "tab" || target?.member?.kind !== "tab") {
        return socketProblem(ranks[from]!, "a relayed message to no tab");
      }
      new DataView(data).setUint32(0, from, true);
      if (target.socket.readyState === WebSocket.OPEN) target.socket.send(data);
      return;
    }
    const said = parse(data);
    const to = said?.peer, message = said?.message;
    const control = typeof message === "object" && message !== null &&
      ("probe" in message || "abort" in message || "bye" in message);
    if (control && ranks[to]?.member?.kind === "tab" && ranks[from]?.member?.kind === "tab") {
      if (to !== from) return send(to, { peer: from, message });
    }
    socketProblem(ranks[from]!, "a message the hub does not carry");
  }

  function socketProblem(joined: Joined, what: string): void {
    joined.socket.close(4400, what.slice(0, 100));
  }

  function onClose(rank: number, joined: Joined, e: CloseEvent): void {
    if (ranks[rank] !== joined) return;
    if (phase === "joining") {
      ranks[rank] = undefined;
      if (joined.member) event({ kind: "left", rank, before: "table" });
      return;
    }
    if (phase === "failed") return;
    const tab = joined.member?.kind === "tab";
    const reason = `its ${tab ? "tab" : "process"} closed its connection to the group's hub ` +
      `(code ${e.code}${e.reason ? `: ${e.reason}` : ""})`;
    if (phase === "linking") return fail(rank, reason, false);
    // A process that ends is judged by its launcher; a tab by how its transport closed.
    if (!tab) return;
    const end = tabEnd(e);
    event(end ? { kind: "ended", rank, end } : { kind: "lost", rank, reason });
    if (end) return;
    // Its relayed peers learn here; the others find their own connections closed.
    for (let r = 0; r < o.size; r++) if (r !== rank) send(r, { lost: { rank, reason } });
  }

  return {
    port,
    url: `ws://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}/join`,
    async close() {
      clearTimeout(deadline);
      for (const r of ranks) r?.socket.close(1000);
      for (const page of tabHosts) page?.close(1000);
      await server.shutdown();
    },
  };
}

// deno-lint-ignore no-explicit-any
function parse(text: string): any {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null ? v : undefined;
  } catch {
    return undefined;
  }
}
