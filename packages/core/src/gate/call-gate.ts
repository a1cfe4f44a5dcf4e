import { ErrorCode, SluiceError } from '../errors.js';
import type { BreakerState } from './breaker.js';
import { Deadlines, timeoutError } from './deadlines.js';
import type { ResolvedFailureOptions, StoreErrorEvent } from './failure-options.js';
import { type GateScope, GateScopes, type SlotOwner } from './gate-scopes.js';
import { StartUp, type StartUpClient, startUpError } from './start-up.js';

export type Operation = StoreErrorEvent['operation'];

/** The client as the gate reads it: its status, and its first `ready` (or `end`). */
export type GateClient = StartUpClient;

/**
 * What the gate needs: the resolved failure options of its store (see `resolveFailureOptions`;
 * the logger, where failures are said loudly; the policy and share, for the log's lines), its
 * client and clock, and who speaks.
 */
export interface GateOptions
  extends Pick<
    ResolvedFailureOptions,
    | 'timeout'
    | 'readyTimeout'
    | 'breaker'
    | 'onError'
    | 'onBreakerChange'
    | 'logger'
    | 'failurePolicy'
    | 'outageShare'
  > {
  readonly client: GateClient;
  readonly clock: () => number;
  /**
   * The log's words for the policy, when the store answers its own way (SyncedStore's local view).
   * @default the failure policy's
   */
  readonly policyText?: string;
  /** Who speaks in error messages and the failure log: the store and what it calls (`'RedisStore'`, `'Redis'`). */
  readonly names: { readonly store: string; readonly backend: string };
  /** On a Cluster, the primary owning each slot: one breaker per primary (see `GateScopes`). */
  readonly owner?: SlotOwner | undefined;
  /**
   * Whether a failed call still proves the backend answers: an error it replied about this one
   * call (a bad argument, a key of another type) or a refusal it answered at once (Redis
   * Cluster's `CLUSTERDOWN`). The breaker hears such a failure as a success (see `count`). Only
   * the backend's protocol can tell, so its store brings the rule (`@sluice/redis`'s, the
   * server's for a sluice-server).
   * @default none: every failure counts as the backend being away
   */
  readonly backendAnswered?: ((error: unknown) => boolean) | undefined;
}

/** Why a call did not go to the backend: its client never became ready, or its scope's breaker is open. */
interface Stopped {
  readonly stopped: 'not-ready' | 'open';
  readonly scope: GateScope;
}

/**
 * The gate every call of a store to its remote backend passes (RedisStore's to Redis, ServerStore's
 * to a sluice-server), limits and leases alike: the start-up wait, the circuit breaker of the
 * call's node, the timeout, and the report (`onError` and the failure log). Callers supply what to
 * answer instead (the failure policy). A call on one Cluster slot passes that slot's primary's
 * breaker (`slot`); others pass the store's.
 */
export class CallGate {
  private readonly deadlines: Deadlines;
  private readonly startUp: StartUp;
  private readonly scopes: GateScopes;
  private readonly store: string;
  private readonly backend: string;
  private readonly backendAnswered: (error: unknown) => boolean;

  constructor(private readonly options: GateOptions) {
    this.store = options.names.store;
    this.backend = options.names.backend;
    this.backendAnswered = options.backendAnswered ?? never;
    this.deadlines = new Deadlines(options.timeout, undefined, undefined, undefined, this.backend);
    this.startUp = new StartUp(options.client, options.readyTimeout, (keys, why) =>
      this.report('connect', keys, startUpError(this.store, this.backend, why)),
    );
    this.scopes = new GateScopes(options);
  }

  /** The worst breaker state of the store's (`'open'` if one Cluster primary's is); `'closed'` with no breaker. */
  get state(): BreakerState {
    return this.scopes.worstState();
  }

  /** ms until the breaker of `slot`'s node next lets a call through (its whole cooldown while closed); 1000 with no breaker. */
  retryAfter(slot?: number): number {
    return this.scopes.of(slot).breaker?.retryAfter() ?? 1000;
  }

  /** Whether a call on `slot` would be answered by the policy at once (its breaker is open and not probing). */
  away(slot: number | undefined): boolean {
    return this.scopes.of(slot).breaker?.blocking() === true;
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
    slot?: number,
  ): Promise<T> {
    return this.map(operation, keys, attempt, identity as (reply: T) => T, fail, slot);
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
    slot?: number,
  ): Promise<T> {
    const admitted = this.admit(keys, slot);
    if (admitted instanceof Promise) {
      return admitted.then((scope) =>
        'stopped' in scope
          ? this.answer(scope.scope, fail)
          : this.call(scope, operation, keys, attempt, read, fail),
      );
    }
    if ('stopped' in admitted) return this.answer(admitted.scope, fail);
    return this.call(admitted, operation, keys, attempt, read, fail);
  }

  /**
   * For a compensation whose loss must never pass in silence (the refund of a refused cross-slot
   * request): `run`, except that an open breaker is reported too (`ERR_SLUICE_STORE_FAILURE`, not
   * applied). Never rejects; resolves to the reply, or `undefined` when it did not happen.
   */
  async compensate<R>(
    operation: Operation,
    keys: number,
    attempt: () => Promise<R>,
    slot?: number,
  ): Promise<R | undefined> {
    const admitted = this.admit(keys, slot);
    // Awaited only while the client starts: a call let through goes out now, in the caller's turn.
    const scope = admitted instanceof Promise ? await admitted : admitted;
    if ('stopped' in scope) {
      if (scope.stopped === 'open')
        this.report(operation, keys, this.stoppedError(scope, operation), scope.scope);
      return undefined;
    }
    return this.call<R, R | undefined>(scope, operation, keys, attempt, identity, () => undefined);
  }

  /**
   * For the cleanup of a call that timed out but that the backend answered late (the release of a
   * late admitted lease): the late reply shows it is answering again, while the breaker is likely
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

  /**
   * For administrative calls whose caller must know they did not happen (`reset`): rejects with
   * `ERR_SLUICE_STORE_FAILURE` when the breaker is open or the backend fails (after reporting it).
   */
  async strict(operation: Operation, keys: number, attempt: () => Promise<unknown>): Promise<void> {
    const admitted = this.admit(keys, undefined);
    const scope = admitted instanceof Promise ? await admitted : admitted;
    if ('stopped' in scope) throw this.stoppedError(scope, operation);
    try {
      await this.deadlines.race(attempt(), operation);
      this.succeeded(scope);
    } catch (error) {
      this.count(scope, this.backendAnswered(error));
      this.report(operation, keys, error, scope);
      throw new SluiceError(
        ErrorCode.STORE_FAILURE,
        `${this.store}: ${operation} failed: ${messageOf(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** Tells `onError` and the failure log (of `scope`, else the store's) of a failure. */
  report(operation: Operation, keys: number, error: unknown, scope: GateScope = this.scopes.whole): void {
    scope.log?.failed(operation, error);
    const onError = this.options.onError;
    if (onError === undefined) return;
    try {
      onError({ operation, keys, error, breaker: scope.breaker?.state ?? 'closed' });
    } catch {
      // A throwing hook must not turn a handled failure into a crash.
    }
  }

  /**
   * Whether a call may go now (the start-up wait over, the breaker of its scope letting it
   * through): the scope it passes, or why it may not. A promise only while the client starts.
   */
  private admit(keys: number, slot: number | undefined): GateScope | Stopped | Promise<GateScope | Stopped> {
    const starting = this.startUp.wait(keys);
    if (starting !== undefined) {
      return starting.then((ready) =>
        ready ? this.admit(keys, slot) : { stopped: 'not-ready', scope: this.scopes.whole },
      );
    }
    const scope = this.scopes.of(slot);
    if (scope.breaker !== undefined && !scope.breaker.admit()) return { stopped: 'open', scope };
    return scope;
  }

  /** The error of a call that did not go (`compensate`'s report, `strict`'s rejection). */
  private stoppedError({ stopped }: Stopped, operation: Operation): SluiceError {
    return new SluiceError(
      ErrorCode.STORE_FAILURE,
      stopped === 'open'
        ? `${this.store}: the circuit breaker is open; ${operation} not applied`
        : `${this.store}: the ${this.backend} client was not ready; ${operation} not applied`,
    );
  }

  /** `map` once the breaker of `scope` has let the call through. */
  private call<R, T>(
    scope: GateScope,
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
      return this.failed(scope, operation, keys, error, fail);
    }
    const deadlines = this.deadlines;
    return new Promise<T>((resolve, reject) => {
      const deadline = deadlines.add(() => {
        this.failed(
          scope,
          operation,
          keys,
          timeoutError(operation, deadlines.ms, deadlines.backend),
          fail,
        ).then(resolve, reject);
      });
      pending.then(
        (reply) => {
          // After a timeout the late outcome is only observed (never an unhandled rejection).
          if (!deadlines.clear(deadline)) return;
          let value: T;
          try {
            value = read(reply);
          } catch (error) {
            // A reply we cannot read is the backend answering, not the backend being away.
            this.failed(scope, operation, keys, error, fail, true).then(resolve, reject);
            return;
          }
          this.succeeded(scope);
          resolve(value);
        },
        (error: unknown) => {
          if (!deadlines.clear(deadline)) return;
          this.failed(scope, operation, keys, error, fail).then(resolve, reject);
        },
      );
    });
  }

  private failed<T>(
    scope: GateScope,
    operation: Operation,
    keys: number,
    error: unknown,
    fail: () => T | Promise<T>,
    answered = this.backendAnswered(error),
  ): Promise<T> {
    this.count(scope, answered);
    this.report(operation, keys, error, scope);
    return this.answer(scope, fail);
  }

  /** `fail()`'s answer, counted for the log. */
  private answer<T>(scope: GateScope, fail: () => T | Promise<T>): Promise<T> {
    scope.log?.answered();
    return answer(fail);
  }

  /** The backend answered a call: the breaker hears it, and the log says it recovered. */
  private succeeded(scope: GateScope): void {
    scope.breaker?.success();
    if (scope.log?.failing === true) scope.log.recovered();
  }

  /**
   * Tells the breaker how a failed call went. It counts only the backend being away (transport
   * errors, timeouts, a server that cannot serve: LOADING, BUSY…). An error it replied about one
   * call (WRONGTYPE on a key of another type, ERR bad argument, a script error) is deterministic:
   * the same call fails every time while every other key works, so it must not open the breaker
   * and fail a healthy limit; it proves the backend answers (a success for the breaker). So does a
   * Cluster node's CLUSTERDOWN: the node answers at once, and its keys must be Redis's again as
   * soon as the cluster serves, not after a cooldown. Which errors those are, the store's
   * `backendAnswered` says.
   */
  private count(scope: GateScope, answered: boolean): void {
    if (answered) scope.breaker?.success();
    else scope.breaker?.failure();
  }
}

/** No error proves the backend answered (a gate given no `backendAnswered`). */
function never(): boolean {
  return false;
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
