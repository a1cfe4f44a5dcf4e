import { ErrorCode, SluiceError } from '@sluice/core';

/** A call in flight: `expire` runs once when `at` passes first; `done` marks it settled. */
export interface Deadline {
  /** `performance.now()` ms at which the call times out. */
  readonly at: number;
  /** Set by whoever settles the call first: its outcome, or the sweep. */
  done: boolean;
  readonly expire: () => void;
}

/**
 * The deadlines of every call in flight under one timeout, behind a single timer. A timer per call
 * (`setTimeout` + `clearTimeout`) costs more than the rest of the client side of a decision; here
 * a call costs one small object. All calls share `ms`, so deadlines are in the order calls were
 * made: a queue. The timer is armed for the oldest pending deadline, fires, expires what is due,
 * skips what has settled, and re-arms for the next; with nothing in flight it is not armed at all
 * (and it is unref'd, so it never holds the process open). Every call still settles within `ms`
 * plus the timer's own lateness, as with a timer of its own.
 */
export class Deadlines {
  private queue: Deadline[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly ms: number) {}

  /** Starts the clock of one call; the caller sets `done` when the call settles first. */
  add(expire: () => void): Deadline {
    const deadline: Deadline = { at: performance.now() + this.ms, done: false, expire };
    this.queue.push(deadline);
    if (this.timer === undefined) this.arm(this.ms);
    return deadline;
  }

  /** Settles with `promise`, or rejects after `ms` (the late outcome of `promise` is still observed). */
  race<T>(promise: Promise<T>, operation: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const deadline = this.add(() => reject(timeoutError(operation, this.ms)));
      promise.then(
        (value) => {
          if (deadline.done) return;
          deadline.done = true;
          resolve(value);
        },
        (error: unknown) => {
          if (deadline.done) return;
          deadline.done = true;
          reject(error);
        },
      );
    });
  }

  private arm(delay: number): void {
    this.timer = setTimeout(this.sweep, delay);
    this.timer.unref();
  }

  private readonly sweep = (): void => {
    this.timer = undefined;
    const now = performance.now();
    const queue = this.queue;
    let i = this.head;
    for (; i < queue.length; i++) {
      const deadline = queue[i]!;
      if (deadline.done) continue;
      if (deadline.at > now) break;
      deadline.done = true;
      try {
        deadline.expire();
      } catch {
        // An expiry answers a caller; it must not stop the sweep.
      }
    }
    if (i === queue.length) {
      this.queue = [];
      this.head = 0;
      return;
    }
    if (i > 1024 && i * 2 > queue.length) {
      this.queue = queue.slice(i);
      this.head = 0;
    } else {
      this.head = i;
    }
    this.arm(Math.max(1, Math.ceil(queue[i]!.at - now)));
  };
}

export function timeoutError(operation: string, ms: number): SluiceError {
  return new SluiceError(ErrorCode.STORE_FAILURE, `Redis did not answer ${operation} within ${ms} ms`);
}
