/**
 * The `websocket` transport: ranks linked by the runtime's own WebSocket objects, the one link a
 * browser tab has, so tabs and Deno processes make one group (docs/transports/websocket.md). A
 * tab cannot listen: it dials every process rank, processes dial the lower processes, and two tabs
 * reach each other through the group's hub (the launcher), which relays their messages
 * (websocket_join.ts builds the links; deno/transports/websocket_hub.ts is the hub). Each pair has
 * one connection carrying both ways.
 *
 * A message is one or more binary WebSocket messages of at most {@linkcode SEGMENT_BYTES}, each a
 * {@linkcode HEADER_BYTES}-byte header (kind, tag, the sender's call stamp, the message's length,
 * the segment's offset) and its bytes; relayed ones go behind the peer's rank
 * ({@linkcode RELAY_BYTES}). Probes, failure notices and goodbyes are text (JSON). A connection
 * that closes before its peer said goodbye is that peer's failure.
 * @module
 */

import {
  CommError,
  CommTimeoutError,
  failureNotice,
  noticeError,
  PeerFailedError,
} from "../errors.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import type { Goodbye } from "./closing_check.ts";
import { InboxTransport } from "./inbox_transport.ts";
import { PROCESS_MESH, type RankKind, type TransportFacts } from "./transport.ts";

/** Largest piece of a message in one WebSocket message. */
export const SEGMENT_BYTES = 1 << 20;
/** The data header: kind, tag (u32 each), stamp, total and offset (f64 each). */
export const HEADER_BYTES = 32;
/** What precedes a relayed binary message: the other rank (u32) and padding. */
export const RELAY_BYTES = 8;
const DATA = 0xdcc5;
/** A rank's links close with this when it finished. */
export const CLOSE_NORMAL = 1000;
/** …and with this + the failed rank (the reason as close text) when its group failed. */
export const CLOSE_FAILED = 4000;

/** How two ranks are linked, as the run's metadata records it. */
export type LinkKind = "process-process" | "tab-process" | "tab-tab relayed" | "shared memory";

/** How ranks of kinds `a` and `b` on different hosts are linked. */
export function linkKind(a: RankKind, b: RankKind): LinkKind {
  if (a === "tab" && b === "tab") return "tab-tab relayed";
  return a === "tab" || b === "tab" ? "tab-process" : "process-process";
}

/** A group's ranks as the links between them depend on them. */
export interface LinkedGroup {
  /** What every rank is. */
  members: readonly RankKind[];
  /** Ranks each host runs (those of one host share memory: hierarchy.ts). @default {1} */
  threads?: number;
}

/** How ranks `a` and `b` of `group` are linked. */
export function linkBetween(group: LinkedGroup, [a, b]: readonly [number, number]): LinkKind {
  const threads = group.threads ?? 1;
  return Math.floor(a / threads) === Math.floor(b / threads)
    ? "shared memory"
    : linkKind(group.members[a], group.members[b]);
}

/** How many pairs of `group`'s ranks are linked each way. */
export function linkCounts(group: LinkedGroup): Partial<Record<LinkKind, number>> {
  const counts: Partial<Record<LinkKind, number>> = {};
  const size = group.members.length;
  for (let a = 0; a < size; a++) {
    for (let b = a + 1; b < size; b++) {
      const kind = linkBetween(group, [a, b]);
      counts[kind] = (counts[kind] ?? 0) + 1;
    }
  }
  return counts;
}

/** What the transport says to a peer in text. */
export type ControlMessage =
  | { probe: { tag: number; stamp: number } }
  | { abort: { failedRank: number; reason: string } }
  | { bye: Goodbye };

/** What the hub says to a rank in text, once the group has begun. */
export type HubMessage =
  | { peer: number; message: ControlMessage }
  | { lost: { rank: number; reason: string } };

/** What a link hands its transport. */
export type Arrival = ArrayBuffer | ControlMessage | { closed: string };

/**
 * One WebSocket, holding what it receives until someone takes it (`attach`), so nothing that
 * arrives between the rendezvous and the transport is lost.
 */
export class SocketLink {
  readonly socket: WebSocket;
  #queue: MessageEvent[] = [];
  #closed?: CloseEvent;
  #onMessage?: (e: MessageEvent) => void;
  #onClose?: (e: CloseEvent) => void;

  constructor(socket: WebSocket) {
    this.socket = socket;
    socket.binaryType = "arraybuffer";
    socket.onmessage = (e) => this.#onMessage ? this.#onMessage(e) : this.#queue.push(e);
    socket.onclose = (e) => this.#onClose ? this.#onClose(e) : this.#closed = e;
  }

  /** Hands every message (those held first) and the close to these handlers from now on. */
  attach(onMessage: (e: MessageEvent) => void, onClose: (e: CloseEvent) => void): void {
    this.#onMessage = onMessage;
    this.#onClose = onClose;
    for (const e of this.#queue.splice(0)) onMessage(e);
    if (this.#closed) onClose(this.#closed);
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }
}

/** Why a connection closed, in words. */
export function closeReason(e: CloseEvent): string {
  return `its connection closed (code ${e.code}${e.reason ? `: ${e.reason}` : ""})`;
}

/** How this rank reaches each peer: its own socket, or the hub's relay. */
export interface WebSocketLinks {
  /** `direct[p]`: the connection to p, when it has one. */
  direct: (SocketLink | undefined)[];
  /** The connection to the hub, which relays to the peers with no connection of their own. */
  hub: SocketLink;
  /** What every rank of the group is. */
  members: RankKind[];
}

/** Options of {@linkcode WebSocketTransport}. */
export interface WebSocketTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
  /** Called once it has closed (a hub its rank served closes then). */
  release?: () => Promise<void>;
  /**
   * The peers it carries messages to and from (all unless told: the remote part of a
   * hierarchical group leaves out its own host's ranks, hierarchy.ts).
   */
  linked?: (peer: number) => boolean;
  /**
   * The `n`th turn of the event loop a flush waits, in which the runtime's sockets send what they
   * hold (the quickest turn differs between runtimes). @default {webLoopTurn}
   */
  loopTurn?: (n: number) => Promise<void>;
}

/** Message transport over WebSockets (see the module docs). */
export class WebSocketTransport extends InboxTransport {
  readonly name = "websocket" as const;
  readonly facts: TransportFacts = WEBSOCKET_FACTS;
  readonly members: readonly RankKind[];
  readonly #links: WebSocketLinks;
  readonly #release?: () => Promise<void>;
  /** Every socket it holds: its peers' and the hub's. */
  readonly #sockets: (SocketLink | undefined)[];
  readonly #loopTurn: (n: number) => Promise<void>;
  #failed?: Error;
  #closing = false;

  constructor(
    rank: number,
    size: number,
    links: WebSocketLinks,
    options: WebSocketTransportOptions = {},
  ) {
    super(rank, size, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      stalled: (peer, tag) => {
        const stamp = this.calls?.stampOf(tag);
        if (stamp !== undefined) this.#control(peer, { probe: { tag, stamp } });
      },
    }, options.linked);
    this.#links = links;
    this.#sockets = [...links.direct, links.hub];
    this.#loopTurn = options.loopTurn ?? webLoopTurn;
    this.#release = options.release;
    this.members = links.members;
    links.direct.forEach((link, peer) => {
      link?.attach(
        (e) => this.#arrived(peer, e.data),
        (e) => this.#lost(peer, closeReason(e)),
      );
    });
    links.hub.attach((e) => this.#fromHub(e.data), (e) => {
      for (let p = 0; p < size; p++) {
        if (!links.direct[p] && this.goodbyes.expects(p)) {
          this.#lost(p, `the group's hub closed (code ${e.code}), and rank ${p} was reached by it`);
        }
      }
    });
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const direct = this.#links.direct[peer];
    const via = direct ?? this.#links.hub;
    if (!via.open) {
      return Promise.reject(new PeerFailedError(peer, `rank ${peer}'s connection is closed`));
    }
    this.sent[peer]++;
    const total = data.byteLength, lead = direct ? 0 : RELAY_BYTES;
    let offset = 0;
    do {
      const len = Math.min(SEGMENT_BYTES, total - offset);
      // The socket copies what it is given; one message of the header and the bytes, built here.
      const bytes = new Uint8Array(lead + HEADER_BYTES + len);
      const v = new DataView(bytes.buffer);
      if (lead) v.setUint32(0, peer, true);
      v.setUint32(lead, DATA, true);
      v.setUint32(lead + 4, tag, true);
      v.setFloat64(lead + 8, stamp, true);
      v.setFloat64(lead + 16, total, true);
      v.setFloat64(lead + 24, offset, true);
      bytes.set(data.subarray(offset, offset + len), lead + HEADER_BYTES);
      via.socket.send(bytes);
      offset += len;
    } while (offset < total);
    return Promise.resolve();
  }

  /**
   * Resolves once every socket has handed what it holds to the system: a runtime's sockets send
   * on later turns of the event loop (Deno's every message, a browser's what does not fit its
   * pipe at once), which a thread that blocks holds back.
   */
  async flush(): Promise<void> {
    const since = performance.now();
    for (let n = 0; holding(this.#sockets); n++) {
      if (this.#failed) throw this.#failed;
      if (performance.now() - since > this.timeoutMs) {
        throw new CommTimeoutError(
          `Rank ${this.rank} timed out after ${this.timeoutMs} ms sending what it had sent`,
        );
      }
      await this.#loopTurn(n);
    }
  }

  /** A message from `peer`: data, or a control message. */
  #arrived(peer: number, data: ArrayBuffer | string, at = 0): void {
    if (typeof data === "string") {
      const message = parseControl(data);
      if (!message) return this.#malformed(peer, "a text message that is not dccl's");
      return this.#onControl(peer, message);
    }
    const v = new DataView(data, at);
    if (data.byteLength - at < HEADER_BYTES || v.getUint32(0, true) !== DATA) {
      return this.#malformed(peer, `a ${data.byteLength - at}-byte message that is not dccl's`);
    }
    const tag = v.getUint32(4, true), stamp = v.getFloat64(8, true);
    const total = v.getFloat64(16, true), offset = v.getFloat64(24, true);
    const segment = new Uint8Array(data, at + HEADER_BYTES);
    if (
      !Number.isSafeInteger(stamp) || !Number.isSafeInteger(total) ||
      !Number.isSafeInteger(offset) || offset + segment.byteLength > total
    ) return this.#malformed(peer, "a message whose header does not add up");
    this.inbox.deliver(peer, { tag, stamp, total, offset, data: segment });
  }

  /** What the hub relays (a peer's message) or says (a rank was lost). */
  #fromHub(data: ArrayBuffer | string): void {
    if (typeof data !== "string") {
      const peer = data.byteLength >= RELAY_BYTES ? new DataView(data).getUint32(0, true) : -1;
      if (peer < 0 || peer >= this.size || peer === this.rank || this.#links.direct[peer]) {
        return this.abort(new CommError("the group's hub relayed a message from no tab"));
      }
      return this.#arrived(peer, data, RELAY_BYTES);
    }
    const said = parseJson(data) as HubMessage | undefined;
    if (said && "lost" in said) return this.#lost(said.lost.rank, said.lost.reason);
    if (said && "peer" in said && !this.#links.direct[said.peer]) {
      return this.#onControl(said.peer, said.message);
    }
  }

  #onControl(peer: number, message: ControlMessage): void {
    if ("bye" in message) this.peerClosed(peer, message.bye);
    else if ("abort" in message) {
      this.abort(noticeError(this.rank, peer, message.abort.failedRank, message.abort.reason));
    } else if ("probe" in message) {
      const problem = this.calls?.arrived(peer, message.probe.tag, message.probe.stamp);
      if (problem) this.abort(problem);
    }
  }

  #control(peer: number, message: ControlMessage): void {
    const direct = this.#links.direct[peer];
    const via = direct ?? this.#links.hub;
    if (!via.open) return;
    via.socket.send(JSON.stringify(direct ? message : { peer, message }));
  }

  /** `peer`'s link ended: its failure, unless it had said goodbye (or this rank is done). */
  #lost(peer: number, reason: string): void {
    if (this.#closing || this.#failed || this.goodbyes.heardFrom(peer)) return;
    this.abort(new PeerFailedError(peer, reason));
  }

  #malformed(peer: number, what: string): void {
    this.abort(new PeerFailedError(peer, `rank ${peer} sent ${what}`));
  }

  abort(error: CommError): void {
    if (this.#failed) return;
    this.#failed = error;
    this.inbox.fail(error);
    const notice = { abort: failureNotice(error, this.rank) };
    for (let p = 0; p < this.size; p++) {
      if (this.goodbyes.expects(p)) this.#control(p, notice);
    }
    this.goodbyes.interrupt();
  }

  /** Says goodbye to every peer and waits for theirs (closing_check.ts), then closes the links. */
  async close(): Promise<void> {
    if (!this.#failed) {
      const problem = await this.farewell(
        (peer, bye) => this.#control(peer, { bye }),
        () => this.#failed !== undefined,
      );
      if (problem) this.abort(problem);
    }
    this.#closing = true;
    this.inbox.close();
    await flushed(this.#sockets, this.timeoutMs);
    const failed = this.#failed as CommError | undefined;
    const code = failed ? CLOSE_FAILED + (failed.failedRank ?? this.rank) : CLOSE_NORMAL;
    // Close text is at most 123 bytes.
    const why = failed instanceof PeerFailedError
      ? failed.reason
      : `${failed?.name}: ${failed?.message}`;
    const reason = failed
      ? new TextDecoder().decode(new TextEncoder().encode(why).slice(0, 120))
      : "";
    for (const link of this.#sockets) link?.socket.close(code, reason);
    await this.#release?.();
    if (failed) throw failed;
  }
}

/** The flushes waiting for the next message turn. */
const awaitingTurn: (() => void)[] = [];

/**
 * A browser's turn of the loop: a message to itself for the first few (a zero timer set from a
 * timer's task waits 4 ms once they nest, as back-to-back calls make them), then a timer (a large
 * message takes many turns, which messages would spin through).
 */
function webLoopTurn(n: number): Promise<void> {
  if (n >= 8) return new Promise((r) => setTimeout(r, 0));
  return new Promise((resolve) => {
    if (awaitingTurn.push(resolve) > 1) return;
    // A channel for the turn, closed after it: an open port would keep a runtime alive.
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      for (const r of awaitingTurn.splice(0)) r();
    };
    channel.port2.postMessage(0);
  });
}

/** Whether an open one of `links` still holds bytes it has not handed to the system. */
function holding(links: readonly (SocketLink | undefined)[]): boolean {
  return links.some((l) => l?.open && l.socket.bufferedAmount > 0);
}

/** Resolves once every open socket has sent what it holds, or after `ms`. */
async function flushed(links: (SocketLink | undefined)[], ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (holding(links) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 1));
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseControl(text: string): ControlMessage | undefined {
  const m = parseJson(text) as Record<string, unknown> | undefined;
  if (typeof m !== "object" || m === null) return undefined;
  return "probe" in m || "abort" in m || "bye" in m ? m as ControlMessage : undefined;
}

/** The `websocket` transport's facts (its Deno descriptor adds how processes connect). */
export const WEBSOCKET_FACTS: TransportFacts = {
  ...PROCESS_MESH,
  name: "websocket",
  summary: "processes and browser tabs over the runtime's WebSocket, one connection per pair " +
    "(tabs dial processes; tab to tab through the hub)",
  joinsTabs: true,
};
