import { ErrorCode, SluiceError } from '@sluice/core';
import type { BreakerOptions } from './breaker.js';
import { type BreakerState, CircuitBreaker } from './breaker.js';
import { FailureLog, policyText } from './failure-log.js';
import type { FailurePolicy, RedisStoreErrorEvent, StoreLogger } from './options.js';
import { Deadlines, timeoutError } from './timeout.js';

export type Operation = RedisStoreErrorEvent['operation'];

/**
 * Client states in which a call is not waited for: `ready` (send it), `end` (closed by its owner or
 * out of reconnection attempts: the call fails as usual), `wait` (`lazyConnect` not yet told to
 * connect: the command itself starts the connection, as ioredis does without the store).
 */
const NO_WAIT = new Set(['ready', 'end', 'wait']);

/** The client as the gate reads it: its status, and its first `ready` (or `end`). */
export interface GateClient {
  readonly status: string;
  once(event: 'ready' | 'end', listener: (...args: unknown[]) => void): unknown;
  removeListener(event: 'ready' | 'end', listener: (...args: unknown[]) => void): unknown;
}

/** What the gate needs: the resolved failure options of its store (see `resolveFailureOptions`). */
export interface GateOptions {
  readonly client: GateClient;
  readonly clock: () => number;
  readonly timeout: number;
  readonly readyTimeout: number;
  readonly breaker: Required<BreakerOptions> | undefined;
  readonly onError: ((event: RedisStoreErrorEvent) => void) | undefined;
  readonly onBreakerChange: ((state: BreakerState, previous: BreakerState) => void) | undefined;
  /** Where failures are said loudly (see `FailureLog`); none: the `onError` hook has them. */
  readonly logger: StoreLogger | undefined;
  /** How calls are answered while the backend is away, for the log's lines. */
  readonly failurePolicy: FailurePolicy;
  readonly outageShare: number;
  /**
   * The log's words for the policy, when the store answers its own way (SyncedStore's local view).
   * @default the failure policy's
   */
  readonly policyText?: string;
  /** Who speaks in error messages: the store and what it calls. @default { store: 'RedisStore', backend: 'Redis' } */
  readonly names?: { readonly store: string; readonly backend: string };
}

/**
 * The gate every call to Redis passes (and every call of ServerStore to a sluice-server), limits and leases alike: the circuit breaker, the
 * timeout, and the `onError` report. Callers supply what to answer instead (the failure policy).
 */
export class CallGate {
  private readonly breaker: CircuitBreaker | undefined;
  private readonly deadlines: Deadlines;
  /** The client has been ready once, or the start-up wait is over: calls no longer wait. */
  private started: boolean;
  /** While calls wait for the first connection: resolves true once ready, false past the bound. */
  private starting: Promise<boolean> | undefined;
  /** Limits and lease sets of the calls waiting (the `keys` of a `'connect'` report). */
  private waitingKeys = 0;
  private readonly store: string;
  private readonly backend: string;
  private readonly log: FailureLog | undefined;

  constructor(private readonly options: GateOptions) {
    this.store = options.names?.store ?? 'RedisStore';
    this.backend = options.names?.backend ?? 'Redis';
    const { logger, failurePolicy, outageShare } = options;
    this.log =
      logger === undefined
        ? undefined
        : new FailureLog(logger, options.clock, {
            store: this.store,
            backend: this.backend,
            policy:
              options.policyText ??
              policyText(typeof failurePolicy === 'object' ? 'store' : failurePolicy, outageShare),
          });
    this.deadlines = new Deadlines(options.timeout, undefined, undefined, undefined, this.backend);
    // A client ready before any call (now, or later in the background) is never waited for again.
    const client = options.client;
    this.started = options.readyTimeout === 0 || client.status === 'ready';
    if (!this.started) {
      client.once('ready', () => {
        this.started = true;
      });
    }
    const { breaker, clock, onBreakerChange } = options;
    this.breaker =
      breaker === undefined
        ? undefined
        : new CircuitBreaker(breaker.failures, breaker.cooldown, clock, (state, previous) => {
            this.log?.breaker(state, previous, breaker.failures, breaker.cooldown);
            onBreakerChange?.(state, previous);
          });
  }

  /** The circuit breaker's state (`'closed'` when there is no breaker). */
  get state(): BreakerState {
    return this.breaker?.state ?? 'closed';
  }

  /** ms until the breaker next lets a call through (its whole cooldown while closed); 1000 with no breaker. */
  retryAfter(): number {
    return this.breaker?.retryAfter() ?? 1000;
  }

  /**
   * Runs `attempt` under the breaker and the timeout; any failure is reported and answered by
   * `fail`, so the result never rejects (unless `fail` does). An open breaker answers with `fail`
   * at once, without a report.
   */
  run<T>(
    operation: Operation,
    keys: number,
    attempt: () => Promise<T>,
    fail: () => T | Promise<T>,
  ): Promise<T> {
    return this.map(operation, keys, attempt, identity as (reply: T) => T, fail);
  }

  /**
   * `run`, with the reply turned into the answer by `read` in the same step (the hot path of a
   * decision: one promise of its own, no timer of its own). A `read` that throws is a failure.
   */
  map<R, T>(
    operation: Operation,
    keys: number,
    attempt: () => Promise<R>,
    read: (reply: R) => T,
    fail: () => T | Promise<T>,
  ): Promise<T> {
    if (!this.started) {
      const starting = this.startup(keys);
      if (starting !== undefined) {
        return starting.then((ready) =>
          ready ? this.map(operation, keys, attempt, read, fail) : this.answer(fail),
        );
      }
    }
    if (this.breaker !== undefined && !this.breaker.admit()) return this.answer(fail);
    return this.call(operation, keys, attempt, read, fail);
  }

  /**
   * Undefined when a call may go now; else the wait for the client's first `ready` (shared by
   * every call that arrives meanwhile), true once ready, false past `readyTimeout` or if the
   * client ends first (then reported once, as `'connect'`). Before the first connection a call
   * would fail at once (offline queue off) or wait in ioredis' queue past `timeout`: either way
   * it would count as Redis failing and open the breaker before Redis was ever asked.
   */
  private startup(keys: number): Promise<boolean> | undefined {
    // The store does not manage the connection: it reads its status and waits for it.
    const client = this.options.client;
    const status = client.status;
    if (status === 'ready') this.started = true;
    if (NO_WAIT.has(status)) return undefined;
    this.waitingKeys += keys;
    this.starting ??= new Promise<boolean>((resolve) => {
      const done = (ready: boolean, why?: string) => {
        clearTimeout(timer);
        client.removeListener('ready', onReady);
        client.removeListener('end', onEnd);
        this.starting = undefined;
        const waited = this.waitingKeys;
        this.waitingKeys = 0;
        if (why !== undefined) {
          this.report(
            'connect',
            waited,
            new SluiceError(ErrorCode.STORE_FAILURE, `${this.store}: the ${this.backend} client ${why}`),
          );
        }
        resolve(ready);
      };
      const onReady = () => {
        this.started = true;
        done(true);
      };
      const onEnd = () => done(false, 'ended before it was ready');
      const ms = this.options.readyTimeout;
      const timer = setTimeout(() => {
        // The start-up is over: later calls go to the client as they are (and count as usual).
        this.started = true;
        done(false, `was not ready within readyTimeout (${ms} ms; status '${client.status}')`);
      }, ms);
      timer.unref?.();
      client.once('ready', onReady);
      client.once('end', onEnd);
    });
    return this.starting;
  }

  /**
   * For a compensation whose loss must never pass in silence (the refund of a refused cross-slot
   * request): `run`, except that an open breaker is reported too (`ERR_SLUICE_STORE_FAILURE`, not
   * applied). Never rejects; resolves to the reply, or `undefined` when it did not happen.
   */
  compensate<R>(operation: Operation, keys: number, attempt: () => Promise<R>): Promise<R | undefined> {
    const none = (): undefined => undefined;
    if (!this.started) {
      const starting = this.startup(keys);
      if (starting !== undefined) {
        return starting.then((ready) => (ready ? this.compensate(operation, keys, attempt) : undefined));
      }
    }
    if (this.breaker !== undefined && !this.breaker.admit()) {
      this.report(
        operation,
        keys,
        new SluiceError(
          ErrorCode.STORE_FAILURE,
          `${this.store}: the circuit breaker is open; ${operation} not applied`,
        ),
      );
      return Promise.resolve(undefined);
    }
    return this.call<R, R | undefined>(operation, keys, attempt, identity, none);
  }

  /**
   * For the cleanup of a call that timed out but that Redis answered late (the release of a late
   * admitted lease): the late reply shows Redis is answering again, while the breaker is likely
   * open because of that very timeout, and dropping the cleanup would leave a ghost lease for its
   * whole ttl. So it skips the breaker (neither asked nor told), keeps the timeout, and reports a
   * failure. Never rejects.
   */
  cleanup<R>(operation: Operation, keys: number, attempt: () => Promise<R>): Promise<R | undefined> {
    let pending: Promise<R>;
    try {
      pending = this.deadlines.race(attempt(), operation);
    } catch (error) {
      pending = Promise.reject(error);
    }
    return pending.catch((error: unknown) => {
      this.report(operation, keys, error);
      return undefined;
    });
  }

  /** `map` once the breaker has let the call through. */
  private call<R, T>(
    operation: Operation,
    keys: number,
    attempt: () => Promise<R>,
    read: (reply: R) => T,
    fail: () => T | Promise<T>,
  ): Promise<T> {
    let pending: Promise<R>;
    try {
      pending = attempt();
    } catch (error) {
      return this.failed(operation, keys, error, fail);
    }
    const deadlines = this.deadlines;
    return new Promise<T>((resolve, reject) => {
      const deadline = deadlines.add(() => {
        this.failed(operation, keys, timeoutError(operation, deadlines.ms, deadlines.backend), fail).then(
          resolve,
          reject,
        );
      });
      pending.then(
        (reply) => {
          // After a timeout the late outcome is only observed (never an unhandled rejection).
          if (!deadlines.settle(deadline)) return;
          let value: T;
          try {
            value = read(reply);
          } catch (error) {
            // A reply we cannot read is Redis answering, not Redis being away.
            this.failed(operation, keys, error, fail, true).then(resolve, reject);
            return;
          }
          this.succeeded();
          resolve(value);
        },
        (error: unknown) => {
          if (!deadlines.settle(deadline)) return;
          this.failed(operation, keys, error, fail).then(resolve, reject);
        },
      );
    });
  }

  private failed<T>(
    operation: Operation,
    keys: number,
    error: unknown,
    fail: () => T | Promise<T>,
    answered = isReplyError(error),
  ): Promise<T> {
    this.count(answered);
    this.report(operation, keys, error);
    return this.answer(fail);
  }

  /** `fail()`'s answer, counted for the log. */
  private answer<T>(fail: () => T | Promise<T>): Promise<T> {
    this.log?.answered();
    return answer(fail);
  }

  /** The backend answered a call: the breaker closes (if it was the probe) and the log says it recovered. */
  private succeeded(): void {
    this.breaker?.success();
    if (this.log?.failing === true) this.log.recovered();
  }

  /**
   * For administrative calls whose caller must know they did not happen (`reset`): rejects with
   * `ERR_SLUICE_STORE_FAILURE` when the breaker is open or Redis fails (after reporting it).
   */
  async strict(operation: Operation, keys: number, attempt: () => Promise<unknown>): Promise<void> {
    if (!this.started) {
      const starting = this.startup(keys);
      if (starting !== undefined && !(await starting)) {
        throw new SluiceError(
          ErrorCode.STORE_FAILURE,
          `${this.store}: the ${this.backend} client was not ready; ${operation} not applied`,
        );
      }
    }
    if (this.breaker !== undefined && !this.breaker.admit()) {
      throw new SluiceError(
        ErrorCode.STORE_FAILURE,
        `${this.store}: the circuit breaker is open; ${operation} not applied`,
      );
    }
    try {
      await this.deadlines.race(attempt(), operation);
      this.succeeded();
    } catch (error) {
      this.count(isReplyError(error));
      this.report(operation, keys, error);
      throw new SluiceError(
        ErrorCode.STORE_FAILURE,
        `${this.store}: ${operation} failed: ${messageOf(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /**
   * Tells the breaker how a failed call went. It counts only Redis being away (transport errors,
   * timeouts, a server that cannot serve: LOADING, BUSY, CLUSTERDOWN…). An error Redis replied
   * about one call (WRONGTYPE on a key of another type, ERR bad argument, a script error) is
   * deterministic: the same call fails every time while every other key works, so it must not
   * open the breaker and fail a healthy limit; it proves Redis answers (a success for the breaker).
   */
  private count(answered: boolean): void {
    if (answered) this.breaker?.success();
    else this.breaker?.failure();
  }

  /** Tells `onError` and the log of a failure. */
  report(operation: Operation, keys: number, error: unknown): void {
    this.log?.failed(operation, error);
    const onError = this.options.onError;
    if (onError === undefined) return;
    try {
      onError({ operation, keys, error, breaker: this.state });
    } catch {
      // A throwing hook must not turn a handled failure into a crash.
    }
  }
}

/**
 * Whether `error` is Redis replying that this one call is wrong: a reply error (ioredis and its
 * forks name it `ReplyError`) with code `WRONGTYPE` or `ERR` (bad argument, not an integer, a
 * script error), except an `ERR` about the server itself (too many clients).
 */
function isReplyError(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return false;
  const message = error.message;
  if (message.startsWith('WRONGTYPE ')) return true;
  return message.startsWith('ERR ') && !message.startsWith('ERR max number of clients');
}

function identity<T>(value: T): T {
  return value;
}

/** `fail()` as a promise: its value, or its throw as a rejection. */
function answer<T>(fail: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fail());
  } catch (error) {
    return Promise.reject(error);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
