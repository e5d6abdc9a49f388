/**
 * The `sim` transport's event queue: a binary heap of events by virtual time, ties in the order
 * they were queued (so two messages of one sender on one path keep their order).
 * @module
 */

/** Something that happens at a virtual time. */
export interface SimEvent {
  /** µs of virtual time. */
  time: number;
  /** Queue order, for ties. */
  seq: number;
  /** What happens. */
  fire(): void;
  /** The rank it wakes (resolves an operation of), if any: at most one wake per rank a batch. */
  wakes?: number;
}

/** A min-heap of events by (time, seq). */
export class EventQueue {
  #heap: SimEvent[] = [];
  #seq = 0;

  /** Events queued. */
  get size(): number {
    return this.#heap.length;
  }

  /** The earliest event's time (Infinity when empty). */
  get first(): number {
    return this.#heap.length ? this.#heap[0].time : Infinity;
  }

  /** Queues `fire` at `time`, waking `wakes` if given. */
  push(time: number, fire: () => void, wakes?: number): void {
    this.requeue({ time, seq: this.#seq++, fire, wakes });
  }

  /** Queues an event again, keeping its place among ties. */
  requeue(e: SimEvent): void {
    const h = this.#heap;
    let i = h.length;
    h.push(e);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(e, h[parent])) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = e;
  }

  /** Takes the earliest event. */
  pop(): SimEvent {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && before(h[r], h[l]) ? r : l;
      if (!before(h[c], last)) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = last;
    return top;
  }

  /** Drops every event. */
  clear(): void {
    this.#heap = [];
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
