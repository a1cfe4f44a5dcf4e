/**
 * The deadlines of gRPC calls (`grpc-timeout`) without a Node timer per call: Envoy sends the same
 * timeout on every rate limit call (its filter's `timeout`, 20 ms by default), so the calls with
 * one timeout value come due in the order they arrived. Each value keeps a queue in that order and
 * one timer, armed for its oldest call; a call answered in time is only marked (no list to unlink
 * from, no 'close' listener), and is dropped when the queue reaches it. A marked call holds
 * nothing but its entry until then, so queues are kept for short timeouts only: longer ones get a
 * timer of their own, which a closed stream clears.
 */

/**
 * The longest timeout queued, ms. A queued call reset by its client before its request ended is
 * held (with its stream) until its due time, not freed at the reset: at 10 k calls/s that is at
 * most 10,000 of them. Envoy's rate limit filter defaults to 20 ms.
 */
export const QUEUED_TIMEOUT_MS = 1000;

/** A deadline that can still be cancelled (the call was answered, or its stream closed). */
export interface Deadline {
  /** In a queue: a call that ends early needs no cancelling for its memory's sake. */
  readonly queued: boolean;
  cancel(): void;
}

class Entry implements Deadline {
  readonly queued = true;
  next: Entry | undefined = undefined;
  constructor(
    readonly due: number,
    public expire: (() => void) | undefined,
  ) {}

  cancel(): void {
    this.expire = undefined;
  }
}

/** The calls of one timeout value, oldest first, and the timer armed for the oldest. */
class Queue {
  head: Entry | undefined;
  tail: Entry | undefined;
  armed = false;
}

export class Deadlines {
  private readonly queues = new Map<number, Queue>();

  /**
   * Runs `expire` once `timeoutMs` have passed, unless the returned deadline is cancelled first.
   * A timeout longer than QUEUED_TIMEOUT_MS (or not a whole number of ms) gets its own timer.
   */
  add(timeoutMs: number, expire: () => void): Deadline {
    if (timeoutMs > QUEUED_TIMEOUT_MS || !Number.isInteger(timeoutMs)) {
      const timer = setTimeout(expire, timeoutMs);
      return { queued: false, cancel: () => clearTimeout(timer) };
    }
    let queue = this.queues.get(timeoutMs);
    if (queue === undefined) {
      queue = new Queue();
      this.queues.set(timeoutMs, queue);
    }
    const entry = new Entry(performance.now() + timeoutMs, expire);
    if (queue.tail === undefined) queue.head = entry;
    else queue.tail.next = entry;
    queue.tail = entry;
    if (!queue.armed) this.arm(queue, timeoutMs);
    return entry;
  }

  private arm(queue: Queue, ms: number): void {
    queue.armed = true;
    // Node fires a timer once at least `ms` have passed by the loop's millisecond clock, with no
    // promise of exact timing (https://nodejs.org/api/timers.html#settimeoutcallback-delay-args),
    // which can read a fraction of a ms short by performance.now(): fire() arms again for the rest.
    // Unref'd: a call in flight keeps the process up by its connection; a queue of answered calls
    // must not hold a closed server's process up to QUEUED_TIMEOUT_MS.
    setTimeout(() => this.fire(queue), Math.max(1, Math.ceil(ms))).unref();
  }

  private fire(queue: Queue): void {
    queue.armed = false;
    const now = performance.now();
    let entry = queue.head;
    while (entry !== undefined && entry.due <= now) {
      const expire = entry.expire;
      entry.expire = undefined;
      queue.head = entry.next;
      if (queue.head === undefined) queue.tail = undefined;
      expire?.();
      entry = queue.head;
    }
    if (entry !== undefined && !queue.armed) this.arm(queue, entry.due - now);
  }
}
