/**
 * How a rank joins a `websocket` group (websocket.ts), in Deno or in a tab: it opens a WebSocket
 * to the group's hub with the run's token and its rank (a process's own; a tab's, reserved by its
 * page first: {@linkcode reserveTabHost}), says where it listens (a process), and waits for the
 * table the hub sends once every rank has joined. Then it links: a tab dials
 * every process, a process dials the lower processes and takes the dials of the others (its
 * listener: deno/transports/websocket.ts); two tabs are relayed by the hub. Once every rank says
 * its links are open the hub says go (DISCO's readiness barrier: nobody sends before everyone can
 * receive).
 * @module
 */

import { CommError, CommTimeoutError, PeerFailedError } from "../errors.ts";
import type { RankKind, Transport } from "./transport.ts";
import {
  closeReason,
  linkKind,
  SocketLink,
  type WebSocketLinks,
  WebSocketTransport,
} from "./websocket.ts";

/** One rank of the table: a process (with where it listens) or a tab. */
export interface Member {
  /** A Deno process or a browser tab. */
  kind: RankKind;
  /** A process's listener (`ws://host:port/`). */
  url?: string;
}

/** What the hub tells each rank once every rank has joined. */
export interface GroupTable {
  /** The rank the table is for. */
  rank: number;
  /** Ranks in the group. */
  size: number;
  /** Every rank, by rank. */
  members: Member[];
  /** The origins tabs' pages come from (a process's listener accepts dials from them). */
  origins?: string[];
  /** What a tab runs (the launcher's task), handed to tabs. */
  task?: unknown;
  /** The group's timeout, where the hub knows it (a tab does not). */
  timeoutMs?: number;
}

/** What the hub tells a tab's page that reserved a host: the ranks its workers claim. */
export interface Reservation {
  /** The host's ranks, by local index. */
  ranks: number[];
  /** Ranks in the group. */
  size: number;
  /** Ranks 0 … processes−1 are processes. */
  processes: number;
  /** Ranks each host runs. */
  threads: number;
  /** What the tab runs (the launcher's task). */
  task?: unknown;
  /** The group's timeout, where the hub knows it. */
  timeoutMs?: number;
}

/** What the hub says before the group begins. */
export type JoinAnswer =
  | { reserved: Reservation }
  | { table: GroupTable }
  | { go: true }
  | { fail: { rank: number; reason: string; timeout?: boolean } };

/** Where a process takes its peers' dials. */
export interface Listener {
  /** Its address, as peers dial it. */
  readonly url: string;
  /** Learns the table (who may dial, from which origin). */
  table(table: GroupTable): void;
  /** The connection `peer` opened to this rank. */
  accepted(peer: number): Promise<WebSocket>;
  /** Stops listening and closes what it took. */
  close(): Promise<void>;
}

/** Opens a client WebSocket (the runtime's own unless told). */
export type Dial = (url: string, protocol: string) => WebSocket;

/** Options of {@linkcode joinWebSocketGroup}. */
export interface JoinOptions {
  /** How this rank dials (a runtime whose own client delays small writes brings another). */
  dial?: Dial;
  /** The hub's address (`ws://host:port/join`). */
  hub: string;
  /** The run's token. */
  token: string;
  /** A process's rank (a tab is given one). */
  rank?: number;
  /** A process's listener (a tab has none). */
  listener?: Listener;
  /** Milliseconds each dial may take, and each wait of the group's. */
  timeoutMs: number;
  /** Called once the transport has closed (rank 0's own hub closes then). */
  release?: () => Promise<void>;
  /** What a tab tells the hub about itself (shown on the join page and in the metadata). */
  about?: Record<string, unknown>;
  /**
   * The peers this rank links to (all unless told: a hierarchical group's mesh leaves out the
   * ranks of its own host, which share its memory).
   */
  linked?: (peer: number) => boolean;
  /** A turn of the event loop, in which sockets send (see `WebSocketTransportOptions`). */
  loopTurn?: (n: number) => Promise<void>;
}

/**
 * The WebSocket subprotocol a dial offers: `dccl.<token in hex>[.<the dialer's rank>]`, one value
 * (a page cannot set headers; Deno's server reads a list only as comma and space, which npm `ws`
 * does not write), which the server echoes once it has checked it.
 */
export function offeredProtocol(token: string, rank?: number): string {
  const hex = Array.from(new TextEncoder().encode(token), (b) => b.toString(16).padStart(2, "0"))
    .join("");
  return `dccl.${hex}${rank === undefined ? "" : `.${rank}`}`;
}

/** Whether `rank` dials `peer` (else `peer` dials it, or the hub relays). */
export function dials(members: readonly Member[], rank: number, peer: number): boolean {
  const me = members[rank], them = members[peer];
  if (them.kind === "tab") return false;
  return me.kind === "tab" || peer < rank;
}

/**
 * Opens a WebSocket to `url`, or says why it could not within `ms`. The link holds what arrives
 * from the moment it opens (a hub answers a page at once, before its opener's await resumes).
 */
export function openSocket(
  url: string,
  protocol: string,
  ms: number,
  dial: Dial = (u, p) => new WebSocket(u, p),
): Promise<SocketLink> {
  return new Promise((resolve, reject) => {
    const socket = dial(url, protocol);
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no answer from ${url} within ${ms} ms`));
    }, ms);
    socket.onopen = () => {
      clearTimeout(timer);
      resolve(new SocketLink(socket));
    };
    socket.onerror = () => {}; // the close that follows says it
    socket.onclose = (e) => {
      clearTimeout(timer);
      reject(new Error(`${url} refused the connection (${closeReason(e)})`));
    };
  });
}

/** Joins the group (see the module docs): this rank's transport and the table it joined by. */
export async function joinWebSocketGroup(
  o: JoinOptions,
): Promise<{ transport: Transport; table: GroupTable }> {
  const hub = await dialHub(o, o.rank);
  const socket = hub.socket;
  const answers = hubAnswers(hub);
  try {
    socket.send(JSON.stringify({ join: { url: o.listener?.url, about: o.about } }));
    const { table } = await answers.next("table");
    o.listener?.table(table);
    const links = await openLinks(o, table, hub);
    socket.send(JSON.stringify({ linked: true }));
    await answers.next("go");
    // Messages that follow go reach the transport, which takes the hub's link over here.
    const transport = new WebSocketTransport(table.rank, table.size, links, {
      timeoutMs: table.timeoutMs ?? o.timeoutMs,
      linked: o.linked,
      loopTurn: o.loopTurn,
      release: async () => {
        await o.listener?.close();
        await o.release?.();
      },
    });
    return { transport, table };
  } catch (e) {
    socket.close();
    o.listener?.close();
    throw e;
  }
}

/**
 * A tab's page reserves a host of the group at its hub: the ranks its workers then join as
 * (`rank`). The page's connection holds them; closing it frees them.
 */
export async function reserveTabHost(
  o: Pick<JoinOptions, "hub" | "token" | "timeoutMs">,
): Promise<{ page: WebSocket; reserved: Reservation }> {
  const link = await dialHub(o);
  try {
    const { reserved } = await hubAnswers(link).next("reserved");
    return { page: link.socket, reserved };
  } catch (e) {
    link.socket.close();
    throw e;
  }
}

/** Opens this rank's connection to the hub (`rank`: the one it claims), or says why it could not. */
async function dialHub(
  o: Pick<JoinOptions, "hub" | "token" | "timeoutMs" | "dial">,
  rank?: number,
): Promise<SocketLink> {
  try {
    return await openSocket(o.hub, offeredProtocol(o.token, rank), o.timeoutMs, o.dial);
  } catch (e) {
    throw new CommError(`cannot join the group's hub: ${(e as Error).message}`);
  }
}

/** Dials and takes this rank's connections, as the table says. */
async function openLinks(
  o: JoinOptions,
  table: GroupTable,
  hub: SocketLink,
): Promise<WebSocketLinks> {
  const { rank, size, members } = table;
  const direct: (SocketLink | undefined)[] = new Array(size);
  await Promise.all(members.map(async (m, peer) => {
    if (peer === rank || o.linked?.(peer) === false) return;
    if (linkKind(members[rank].kind, m.kind) === "tab-tab relayed") return;
    try {
      direct[peer] = dials(members, rank, peer)
        ? await openSocket(m.url!, offeredProtocol(o.token, rank), o.timeoutMs, o.dial)
        : new SocketLink(await o.listener!.accepted(peer));
    } catch (e) {
      throw new PeerFailedError(peer, `rank ${peer} could not be linked: ${(e as Error).message}`);
    }
  }));
  return { direct, hub, members: members.map((m) => m.kind) };
}

/** The hub's answers in order, each awaited by its kind; a failure or a close rejects. */
function hubAnswers(hub: SocketLink) {
  const held: JoinAnswer[] = [];
  let waiter: (() => void) | undefined;
  let ended: Error | undefined;
  hub.attach((e) => {
    try {
      held.push(JSON.parse(e.data));
    } catch {
      ended ??= new CommError("the group's hub sent something that is not dccl's");
    }
    waiter?.();
  }, (e) => {
    ended ??= new CommError(`the group's hub closed before the group began (${closeReason(e)})`);
    waiter?.();
  });
  return {
    async next<K extends "reserved" | "table" | "go">(
      kind: K,
    ): Promise<Extract<JoinAnswer, Record<K, unknown>>> {
      for (;;) {
        const answer = held.shift();
        if (answer && "fail" in answer) {
          const { rank, reason, timeout } = answer.fail;
          throw timeout
            ? new CommTimeoutError(reason, { failedRank: rank })
            : new PeerFailedError(rank, reason);
        }
        if (answer && kind in answer) return answer as Extract<JoinAnswer, Record<K, unknown>>;
        if (answer) continue;
        if (ended) throw ended;
        await new Promise<void>((r) => waiter = r);
      }
    },
  };
}
