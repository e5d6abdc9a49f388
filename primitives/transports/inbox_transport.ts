/**
 * What the message transports (`worker`, `ws` and `tcp`, and `gpu`'s host messages) share: an
 * inbox of arriving messages (inbox.ts), the goodbyes ranks exchange as they close (closing_check.ts),
 * and the communicator's calls that judge both. Each transport carries bytes its own way.
 * @module
 */

import { type CommError, PeerFailedError } from "../errors.ts";
import { ClosingCheck, type Goodbye } from "./closing_check.ts";
import { Inbox, type InboxHooks } from "./inbox.ts";
import type { CallCheck, Transport, TransportFacts } from "./transport.ts";

/** A transport whose receives wait in an inbox (see the module docs). */
export abstract class InboxTransport implements Transport {
  abstract readonly name: string;
  abstract readonly facts: TransportFacts;
  readonly rank: number;
  readonly size: number;
  /** Messages arriving from every peer. */
  protected readonly inbox: Inbox;
  protected readonly goodbyes: ClosingCheck;
  /** Messages sent to each peer. */
  protected readonly sent: number[];
  /** Milliseconds a wait may go without progress. */
  protected readonly timeoutMs: number;
  #calls?: CallCheck;

  /**
   * Rank `rank` of `size`; `hooks` say how a stalled receive probes its peer and, for transports
   * that read payloads in place, how an arriving message moves into a receive's buffer. `linked`
   * says which peers it carries messages to and from (all, unless it is the remote part of a
   * hierarchical group: hierarchy.ts).
   */
  constructor(
    rank: number,
    size: number,
    timeoutMs: number,
    hooks: Pick<InboxHooks, "stalled" | "retarget">,
    linked: (peer: number) => boolean = () => true,
  ) {
    this.rank = rank;
    this.size = size;
    this.timeoutMs = timeoutMs;
    this.goodbyes = new ClosingCheck(rank, size, linked);
    this.sent = new Array(size).fill(0);
    this.inbox = new Inbox(rank, size, timeoutMs, {
      check: (peer, tag, stamp) => this.#calls?.arrived(peer, tag, stamp),
      abort: (error) => this.abort(error),
      ...hooks,
    });
  }

  get calls(): CallCheck | undefined {
    return this.#calls;
  }

  set calls(calls: CallCheck | undefined) {
    this.#calls = calls;
    const problem = this.goodbyes.attach(calls);
    if (problem) this.abort(problem);
  }

  abstract send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void>;

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    return this.inbox.post(peer, into, tag);
  }

  probe(peers: readonly number[], tag: number): Promise<number> {
    return this.inbox.probe(peers, tag);
  }

  /** The first of `peers` with an unclaimed message of `tag` here now (see `Inbox.peek`). */
  peek(peers: readonly number[], tag: number): number | undefined {
    return this.inbox.peek(peers, tag);
  }

  abstract abort(error: CommError): void;

  abstract close(): Promise<void>;

  /**
   * Says goodbye to every peer (`say` carries one) and waits for theirs, up to the timeout or
   * until `failed()`; then the problem the goodbyes show, if any.
   */
  protected async farewell(
    say: (peer: number, bye: Goodbye) => void,
    failed: () => boolean,
  ): Promise<CommError | undefined> {
    for (let peer = 0; peer < this.size; peer++) {
      if (this.goodbyes.expects(peer)) say(peer, this.goodbyes.to(this.inbox.taken(peer)));
    }
    await this.goodbyes.wait(this.timeoutMs, failed);
    return failed() ? undefined : this.goodbyes.closing(this.inbox.unclaimed(), this.sent);
  }

  /** `peer` said goodbye: what it sent is delivered, nothing more comes, and its calls are judged. */
  protected peerClosed(peer: number, bye: Goodbye): void {
    const problem = this.goodbyes.heard(peer, bye, this.sent[peer]);
    if (problem) this.abort(problem);
    this.inbox.closePeer(
      peer,
      new PeerFailedError(peer, `rank ${peer} finished and closed its communicator`),
    );
  }
}
