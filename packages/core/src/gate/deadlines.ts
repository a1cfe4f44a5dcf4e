import { ErrorCode, SluiceError } from '../errors.js';

/** What `setTimeout` returns, as far as the sweep needs it. */
export interface Timer {
  unref?(): unknown;
}

/** A call in flight, in its store's list of deadlines until it is answered or times out. */
export interface Deadline {
  /** `performance.now()` ms at which the call times out. */
  readonly at: number;
  /** Ended (answered or timed out): off the list. */
  done: boolean;
  readonly expire: () => void;
  prev: Deadline | undefined;
  next: Deadline | undefined;
}

/**
 * The deadlines of every call in flight under one timeout, behind a single timer. A timer per call
 * (`setTimeout` + `clearTimeout`) costs more than the rest of the client side of a decision. All
 * calls share `ms`, so deadlines come in the order calls were made: a linked list, oldest first,
 * from which a call that is answered unlinks itself at once (so nothing it holds outlives it, even
 * with a long timeout). The timer is armed for the oldest deadline; when it fires it expires what
 * is due and re-arms for the next; with nothing in flight it is not re-armed, and it is unref'd so
 * it never holds the process open. Every call still ends within `ms` plus the timer's own
 * lateness and one turn of I/O (see `sweep`), as with a timer of its own.
 */
export class Deadlines {
  private head: Deadline | undefined;
  private tail: Deadline | undefined;
  private timer: Timer | undefined;
  private sweeping = false;

  /**
   * @param ms the timeout of every call, ms
   * @param clock monotonic ms (tests inject one)
   * @param schedule runs `run` once after `delay` ms (tests inject one)
   * @param backend what a timeout says did not answer
   */
  constructor(
    readonly ms: number,
    private readonly clock: () => number = () => performance.now(),
    private readonly schedule: (run: () => void, delay: number) => Timer = setTimeout,
    private readonly defer: (run: () => void) => unknown = setImmediate,
    readonly backend = 'the backend',
  ) {}

  /** Starts the clock of one call; `expire` runs if it has not ended by then. */
  add(expire: () => void): Deadline {
    const deadline: Deadline = {
      at: this.clock() + this.ms,
      done: false,
      expire,
      prev: this.tail,
      next: undefined,
    };
    if (this.tail === undefined) this.head = deadline;
    else this.tail.next = deadline;
    this.tail = deadline;
    if (this.timer === undefined && !this.sweeping) this.arm(this.ms);
    return deadline;
  }

  /** Takes the call off the list, answered; false if it had already timed out. */
  clear(deadline: Deadline): boolean {
    if (deadline.done) return false;
    deadline.done = true;
    this.unlink(deadline);
    return true;
  }

  /** Resolves or rejects as `promise` does, or rejects after `ms` (the late outcome of `promise` is still observed). */
  race<T>(promise: Promise<T>, operation: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const deadline = this.add(() => reject(timeoutError(operation, this.ms, this.backend)));
      promise.then(
        (value) => {
          if (this.clear(deadline)) resolve(value);
        },
        (error: unknown) => {
          if (this.clear(deadline)) reject(error);
        },
      );
    });
  }

  private unlink(deadline: Deadline): void {
    const { prev, next } = deadline;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    deadline.prev = deadline.next = undefined;
  }

  private arm(delay: number): void {
    this.timer = this.schedule(this.sweep, delay);
    this.timer.unref?.();
  }

  /**
   * The timer fires in the event loop's timers phase, before the loop reads sockets: after a stall
   * of this process (a burst of synchronous work, GC, a busy CPU) replies that have arrived would
   * be expired unread. So the expiry runs after one turn of I/O (`setImmediate`): a call whose
   * reply is already here ends by it, not by a timeout of our own making.
   */
  private readonly sweep = (): void => {
    this.timer = undefined;
    this.sweeping = true;
    this.defer(this.expire);
  };

  private readonly expire = (): void => {
    const now = this.clock();
    for (let deadline = this.head; deadline !== undefined && deadline.at <= now; deadline = this.head) {
      deadline.done = true;
      this.unlink(deadline);
      try {
        deadline.expire();
      } catch {
        // An expiry answers a caller; it must not stop the sweep.
      }
    }
    this.sweeping = false;
    // Calls an expiry started are behind the head: arming for the head covers them.
    if (this.head !== undefined) this.arm(Math.max(1, Math.ceil(this.head.at - now)));
  };
}

export function timeoutError(operation: string, ms: number, backend: string): SluiceError {
  return new SluiceError(ErrorCode.STORE_FAILURE, `${backend} did not answer ${operation} within ${ms} ms`);
}
