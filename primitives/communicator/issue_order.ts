/**
 * Calls in flight begin in the order they were issued. Most begin at once, inside the call that
 * issues them; one that must wait first (a device buffer downloaded, a receive from any rank
 * probing) keeps every later call with the same key waiting until it has begun, and a call can
 * keep the next waiting until it has finished ({@linkcode IssueOrder.holdUntil}). Peers match
 * calls by their order, so ranks that issue the same calls agree whatever each one waits for.
 * @module
 */

/** A claimed place in the order: wait for `ready`, begin, then `release` the next call. */
export interface Turn {
  /** Settles once every call issued before with the same key has begun (or let go). */
  readonly ready: Promise<void> | undefined;
  /** Lets the next call with the key begin. */
  release(): void;
}

/** The order of calls with each key (see the module docs). */
export class IssueOrder {
  /** Per key: settles when the latest call issued with it lets the next one begin. */
  readonly #tails = new Map<number, Promise<void>>();
  #waiting = false;
  readonly #onWaiting?: (waiting: boolean) => void;

  /** `onWaiting` learns whenever calls start or stop waiting to begin. */
  constructor(onWaiting?: (waiting: boolean) => void) {
    this.#onWaiting = onWaiting;
  }

  /** Whether a call with `key` may begin at once: no earlier one is still waiting. */
  free(key = 0): boolean {
    return !this.#waiting || !this.#tails.has(key);
  }

  /** Claims the next place with `key`. */
  claim(key = 0): Turn {
    const ready = this.#tails.get(key);
    let open!: () => void;
    const tail = new Promise<void>((resolve) => open = resolve);
    this.#tails.set(key, tail);
    this.#setWaiting(true);
    return {
      ready,
      release: () => {
        if (this.#tails.get(key) === tail) this.#tails.delete(key);
        this.#setWaiting(this.#tails.size > 0);
        open();
      },
    };
  }

  #setWaiting(waiting: boolean): void {
    if (waiting === this.#waiting) return;
    this.#waiting = waiting;
    this.#onWaiting?.(waiting);
  }

  /** Keeps the next call with `key` waiting until `done` settles (it began at once). */
  holdUntil(done: Promise<unknown>, key = 0): void {
    const turn = this.claim(key);
    done.then(turn.release, turn.release);
  }
}
