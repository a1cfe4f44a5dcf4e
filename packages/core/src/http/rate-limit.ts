import { setTimeout as sleep } from 'node:timers/promises';
import type { Algorithm } from '../algorithm.js';
import { combine, type Decision, decide, shadowed } from '../decision.js';
import { parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import type { Limiter } from '../limiter.js';
import { andThen } from '../maybe.js';
import { MemoryStore } from '../memory-store.js';
import type { LimitCall, MaybePromise, Store } from '../store.js';
import {
  assertCost,
  assertKnownOptions,
  booleanOption,
  functionOption,
  integerOption,
  oneOfOption,
} from '../validate.js';
import { type ClientResponse, clientLeft, watchClient } from './client.js';
import { DecisionHooks } from './decision-hooks.js';
import { type GetHeader, HEADER_FORMATS, RateLimitHeaders, type SetHeader } from './headers.js';
import { type AddressList, addressList } from './ip.js';
import type { RequestAccess } from './keys.js';
import { LimitSet, type Reservation } from './limit-set.js';
import { type CountWhen, HTTP_OPTIONS, type HttpLimitOptions, type ResponseOutcome } from './options.js';
import { type Refusal, refusal } from './problem.js';
import { type AdapterDefaults, Reporter, type RequestAccessBase } from './reporter.js';
import { RequestSlot } from './request-slot.js';

export { httpLimits } from './limit-set.js';

/** The decision when the store failed and the policy is `'deny'`: 503, `Retry-After: 1`. */
const STORE_DOWN: Decision = decide(false, 0, 0, 0, 1000, 0, '', 'store-unavailable');
/** The decision when every limit was skipped for a request (no key). */
const NOT_LIMITED: Decision = decide(true, 0, 0, 0, 0, 0, '', undefined);

const COUNT_WHEN = ['all', 'failed', 'successful'] as const;
/** `count: 'failed'` keeps the units of a response that failed or never finished. */
const FAILED = (_req: unknown, outcome: ResponseOutcome) => !outcome.finished || outcome.statusCode >= 400;
const SUCCESSFUL = (_req: unknown, outcome: ResponseOutcome) => outcome.finished && outcome.statusCode < 400;

/**
 * The request-to-decision logic every adapter shares, compiled once from the options: keys, skip,
 * allow-list, cost, plans, one layered store call per request, the failure policy, the delay
 * mode, the header strings, and what the app may do afterwards (`settle`, `peek`, `reset`, the
 * units given back by `count`). Adapters only move its answers into their response objects.
 */
export class HttpLimiter<Req> {
  /** The `Limiter` of fixed limits; `undefined` when a limit chooses its algorithm per request. */
  readonly limiter: Limiter | undefined;
  readonly store: Store;
  readonly headers: RateLimitHeaders;
  /** The options as given, for adapters that merge per-route options into global ones. */
  readonly options: HttpLimitOptions<Req>;
  readonly delayMode: boolean;
  /** ms. */
  readonly maxDelay: number;
  /** Whether a response's outcome decides if its units count (`count` other than `'all'`). */
  readonly countsOutcome: boolean;
  private readonly set: LimitSet<Req>;
  private readonly access: RequestAccess<Req>;
  private readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  private readonly allow: AddressList | undefined;
  private readonly cost: number;
  private readonly costOf: ((req: Req) => number | Promise<number>) | undefined;
  private readonly counts: ((req: Req, outcome: ResponseOutcome) => boolean) | undefined;
  private readonly failOpen: boolean;
  private readonly reporter: Reporter<Req>;
  private readonly hooks: DecisionHooks<Req>;
  private readonly hold: (ms: number, signal: AbortSignal) => Promise<void>;
  /** What each admitted request holds, until its response's outcome or the app settles it. */
  private readonly reservations = new RequestSlot<Reservation>();

  constructor(
    where: string,
    options: HttpLimitOptions<Req>,
    access: RequestAccessBase<Req>,
    defaults: AdapterDefaults<Req>,
    adapterOptions: readonly string[] = [],
  ) {
    assertKnownOptions(where, options, [...HTTP_OPTIONS, ...adapterOptions]);
    this.options = options;
    this.delayMode = oneOfOption('onLimit', options.onLimit ?? 'refuse', ['refuse', 'delay']) === 'delay';
    this.store = options.store ?? new MemoryStore();
    this.set = new LimitSet(
      options,
      this.store,
      (algorithm) => this.assertQueueAllowed('a plan', algorithm),
      (policy) => (previous, next, key) => this.carry(policy, previous, next, key),
    );
    this.limiter = this.set.limiter;
    this.headers = new RateLimitHeaders(
      options.headers === false ? false : oneOfOption('headers', options.headers ?? 'ietf', HEADER_FORMATS),
      this.set.limits,
      booleanOption('shadowHeaders', options.shadowHeaders ?? false),
    );
    this.skip = functionOption('skip', options.skip);
    this.allow =
      options.allowList === undefined || options.allowList.length === 0
        ? undefined
        : addressList('allowList', options.allowList);
    if (typeof options.cost === 'function') {
      this.cost = 1;
      this.costOf = options.cost;
    } else {
      this.cost = integerOption('cost', options.cost ?? 1);
      this.costOf = undefined;
    }
    this.counts = countOption(options.count);
    this.countsOutcome = this.counts !== undefined;
    if (this.countsOutcome && typeof this.store.refund !== 'function') {
      // Otherwise every request would count, silently: the units of an uncounted response could not go back.
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `count: ${typeof options.count === 'function' ? 'a function' : JSON.stringify(options.count)} needs a store that gives units back (Store.refund); this store has none`,
        { option: 'count', value: options.count },
      );
    }
    this.maxDelay = parseDuration('maxDelay', options.maxDelay ?? '5s');
    this.set.limits.forEach((limit, i) => {
      if (limit.algorithm !== undefined) this.assertQueueAllowed(`limits[${i}]`, limit.algorithm);
    });
    this.failOpen =
      oneOfOption('storeFailure', options.storeFailure ?? 'allow', ['allow', 'deny']) === 'allow';
    this.reporter = new Reporter(options, defaults);
    this.hooks = new DecisionHooks(options, this.set.limits, (error, req) => this.reporter.error(error, req));
    this.hold = functionOption('hold', options.hold) ?? ((ms, signal) => sleep(ms, undefined, { signal }));
    this.access = this.reporter.access(access);
  }

  /** A queue asks requests to wait: only the delay mode can hold them. */
  private assertQueueAllowed(where: string, algorithm: Algorithm): void {
    if (this.delayMode || algorithm.kind !== 'leaky-bucket-queue') return;
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${where} uses leakyBucketQueue(), which asks requests to wait; set onLimit: 'delay' so the middleware holds them`,
      { option: 'onLimit', value: this.options.onLimit },
    );
  }

  /**
   * A request's whole passage through the limits, the order both adapters follow: the check, then,
   * when the decision asks for it, the hold (delay mode). A client that leaves before the request
   * is passed on (while the store answers, or while held) gets `null`, and the units its request
   * took are given back (`Store.refund`), since it will never be served.
   *
   * Resolves to the decision to act on, `undefined` (not limited: pass the request on), or `null`
   * (the client left: send nothing, do not run the handler). Synchronous when the store answers
   * synchronously and nothing is held. Never throws or rejects.
   * @param response the request's Node response, which says when the client leaves
   */
  handle(req: Req, response: ClientResponse): MaybePromise<Decision | undefined | null> {
    // Gone before it reached this middleware: no store call for a request nobody will read.
    if (clientLeft(response)) return null;
    const result = this.evaluate(req);
    if (!(result instanceof Promise)) {
      // Nothing ran between the request's arrival and this answer: only a hold needs watching.
      if (result === undefined || !this.mustWait(result)) return result;
      return this.watched(response, (signal) => this.wait(req, result, signal));
    }
    // Whether the client left while the store answered is read once the answer arrives (a
    // watcher, an AbortSignal and a 'close' listener per request, was 5% of a Fastify server's
    // time on Redis); only a hold, which must end as soon as the client leaves, is watched.
    return result.then((decision) => {
      if (clientLeft(response)) return this.abandon(req, decision);
      if (decision === undefined || !this.mustWait(decision)) return decision;
      return this.watched(response, (signal) => this.wait(req, decision, signal));
    });
  }

  /** Runs `step` with a signal that aborts when the client leaves, watching until it settles. */
  private async watched(
    response: ClientResponse,
    step: (signal: AbortSignal) => Promise<Decision | undefined | null>,
  ): Promise<Decision | undefined | null> {
    const client = watchClient(response);
    try {
      return await step(client.signal);
    } finally {
      client.stop();
    }
  }

  /** A request whose client left before it was passed on: what it took is given back. */
  private async abandon(req: Req, decision: Decision | undefined | null): Promise<null> {
    if (decision?.allowed === true) await this.refund(req);
    return null;
  }

  /**
   * Checks a request against every limit in one store call. `undefined` means "not limited":
   * skipped, allow-listed, no key for any limit, or the store failed under `storeFailure: 'allow'`.
   * Never throws or rejects: failures go to `onError` and the failure policy.
   */
  evaluate(req: Req): MaybePromise<Decision | undefined> {
    let result: MaybePromise<Decision | undefined>;
    try {
      result = andThen(this.skip === undefined ? false : this.skip(req), (skipped) => {
        if (skipped === true) return undefined;
        if (this.allow?.has(this.access.ip(req))) return undefined;
        if (this.costOf === undefined) return this.check(req, this.cost);
        return andThen(this.costOf(req), (cost) => {
          assertCost(cost);
          return this.check(req, cost);
        });
      });
    } catch (error) {
      return this.failed(error, req);
    }
    if (result instanceof Promise) return result.then(applied, (error: unknown) => this.failed(error, req));
    return applied(result);
  }

  /** Whether the adapter must hold the request (`wait`) before acting on `decision`. */
  mustWait(decision: Decision): boolean {
    if (decision.allowed) return decision.delay > 0;
    return (
      this.delayMode &&
      decision.reason === 'rate-limited' &&
      decision.retryAfter > 0 &&
      decision.retryAfter <= this.maxDelay
    );
  }

  /**
   * Holds a request that `mustWait`. Resolves to the decision to act on (`undefined`: not
   * limited), or `null` when `signal` aborted (the client went away: its queue slot is given back
   * and nothing must be sent).
   */
  async wait(req: Req, decision: Decision, signal: AbortSignal): Promise<Decision | undefined | null> {
    if (decision.allowed) {
      if (decision.delay > this.maxDelay) {
        // The queue admitted it, but for longer than this middleware may hold a request.
        return overlong(decision, this.maxDelay, await this.refund(req));
      }
      if (!(await this.held(decision.delay, signal, req))) {
        await this.refund(req);
        return null;
      }
      return decision;
    }
    // Not consumed: wait until a unit should be free, then ask once more.
    if (!(await this.held(decision.retryAfter, signal, req))) return null;
    const again = await this.evaluate(req);
    if (signal.aborted) return this.abandon(req, again);
    if (again?.allowed && again.delay > 0) return this.wait(req, again, signal);
    return again;
  }

  /** Status, `Retry-After` and body for a refused decision. */
  refusal(decision: Decision): Refusal {
    return refusal(decision);
  }

  /**
   * Runs the hooks of a decision about to be answered: `onDecision`, `onBlocked` when a limit's
   * refusal started a block, `onLimited` when refused. A throwing hook is reported to `onError`,
   * never to the client.
   */
  decided(req: Req, decision: Decision): void {
    this.hooks.run(req, decision);
  }

  /** One store call for every limit with a key; an admitted request's reservation is kept. */
  private check(req: Req, cost: number): MaybePromise<Decision | undefined> {
    const set = this.set;
    const limiter = set.limiter;
    if (limiter !== undefined && set.limits.length === 1) {
      // The common case: one fixed limit, its key as a string (the Limiter's direct path).
      return andThen(set.key(0, req, this.access), (key) => {
        if (key === undefined) return NOT_LIMITED;
        return andThen(limiter.check(key, cost === 1 ? undefined : { cost }), (decision) => {
          if (decision.allowed) this.reserve(req, [key], set.fixed, cost);
          return decision;
        });
      });
    }
    return andThen(set.keys(req, this.access), (keys) => {
      if (keys.every((key) => key === undefined)) return NOT_LIMITED;
      if (limiter !== undefined) {
        return andThen(limiter.check(keys, cost === 1 ? undefined : { cost }), (decision) => {
          if (decision.allowed) this.reserve(req, keys, set.fixed, cost);
          return decision;
        });
      }
      return andThen(set.algorithms(req, keys), (algorithms) => {
        const calls = set.calls({ keys, algorithms }, cost);
        return andThen(this.store.consume(calls, undefined), (decisions) => {
          const decision = combined(calls, decisions);
          // Kept refused too: its headers name the plans it was refused by.
          this.reserve(req, keys, algorithms, decision.allowed ? cost : 0);
          return decision;
        });
      });
    });
  }

  private reserve(
    req: Req,
    keys: readonly (string | undefined)[],
    algorithms: readonly (Algorithm | undefined)[],
    cost: number,
  ): void {
    this.reservations.set(req as object, { keys, algorithms, cost, admitted: cost > 0 });
  }

  /**
   * A plan changed for `key` (seen by this process, which remembers the previous plan): what the
   * client consumed under the previous plan (`limit - remaining`) is taken from the new one, as
   * far as it has room (`Store.charge`), and the previous plan's state is dropped. An upgrade
   * keeps its consumption, it does not start afresh; a downgrade is not driven below zero.
   */
  private async carry(policy: string, previous: Algorithm, next: Algorithm, key: string): Promise<void> {
    const store = this.store;
    const [old] = await store.peek([{ algorithm: previous, key, cost: 1, policy }], undefined);
    const used = old === undefined ? 0 : Math.max(0, old.limit - old.remaining);
    if (used > 0 && store.charge !== undefined) {
      await store.charge([{ algorithm: next, key, cost: Math.min(used, next.limit), policy }], undefined);
    }
    await store.reset([{ algorithm: previous, key }]);
  }

  /**
   * Writes the RateLimit headers of `decision` (the quota of each limit as resolved for this
   * request: a plan's own `q=` and `w=`). Answers whether it set any.
   */
  writeHeaders<Res>(
    req: Req,
    decision: Decision,
    res: Res,
    set: SetHeader<Res>,
    get?: GetHeader<Res>,
  ): boolean {
    if (!this.set.planned) return this.headers.write(decision, res, set, get);
    const reservation = this.reservations.get(req);
    return this.headers.write(decision, res, set, get, (name) => {
      const i = this.set.limits.findIndex((limit) => limit.name === name);
      if (i === -1) return undefined;
      return reservation?.algorithms[i] ?? this.set.limits[i]!.plans?.known(reservation?.keys[i] ?? '');
    });
  }

  /**
   * The response of an admitted request ended: under `count`, a response that does not count
   * gives its units back. A throwing `count` function is reported and the units stay counted.
   */
  outcome(req: Req, statusCode: number, finished: boolean): void {
    const reservation = this.reservations.get(req);
    if (reservation === undefined || !reservation.admitted || this.counts === undefined) return;
    let counted: boolean;
    try {
      counted = this.counts(req, { statusCode, finished }) !== false;
    } catch (error) {
      this.reporter.error(error, req);
      return;
    }
    if (!counted) void this.refund(req);
  }

  /**
   * Settles an admitted request to its actual cost, once it is known (tokens an LLM answer used):
   * the difference from what it holds is given back (`Store.refund`) or taken (`Store.charge`,
   * which never drives a limit below zero). May be called again with a new total. Resolves once
   * the store has it; never rejects (store failures go to `onError`). A request that was not
   * limited (skipped, refused, no key) has nothing to settle.
   * @param actual the request's whole cost, an integer ≥ 0
   */
  settle(req: Req, actual: number): Promise<void> {
    if (typeof actual !== 'number' || !Number.isSafeInteger(actual) || actual < 0) {
      throw new SluiceError(
        ErrorCode.INVALID_COST,
        `settle needs the actual cost, an integer ≥ 0; got ${describeValue(actual)}`,
        {
          option: 'actual',
          value: actual,
        },
      );
    }
    const reservation = this.reservations.get(req);
    if (reservation === undefined || !reservation.admitted || actual === reservation.cost)
      return Promise.resolve();
    const delta = actual - reservation.cost;
    reservation.cost = actual;
    const store = this.store;
    return (async () => {
      try {
        if (delta < 0) await store.refund?.(this.set.calls(reservation, -delta), undefined);
        else await store.charge?.(this.set.calls(reservation, delta), undefined);
      } catch (error) {
        this.reporter.error(error, req);
      }
    })();
  }

  /**
   * What the limits hold for this request, without consuming: the combined Decision for the
   * request's cost, or `undefined` when it would not be limited (skipped, allow-listed, no key).
   * Rejects when the store or a key, skip, cost or plan function fails (the app asked).
   */
  async peek(req: Req): Promise<Decision | undefined> {
    if (this.skip !== undefined && (await this.skip(req)) === true) return undefined;
    if (this.allow?.has(this.access.ip(req))) return undefined;
    const cost = this.costOf === undefined ? this.cost : await this.costOf(req);
    assertCost(cost);
    const keys = await this.set.keys(req, this.access);
    const algorithms = await this.set.algorithms(req, keys);
    const calls = this.set.calls({ keys, algorithms }, cost);
    if (calls.length === 0) return undefined;
    return combined(calls, await this.store.peek(calls, undefined));
  }

  /**
   * Forgets what the limits hold for a request's keys, or for one key given as a string (every
   * limit's state on that key; a limit whose plan is per request forgets the plan this process
   * last used for the key). For tests and support tools (express-rate-limit's `resetKey`).
   */
  async reset(target: Req | string): Promise<void> {
    let keys: (string | undefined)[];
    let algorithms: (Algorithm | undefined)[];
    if (typeof target === 'string') {
      keys = this.set.limits.map(() => target);
      algorithms = this.set.limits.map((limit) => limit.algorithm ?? limit.plans!.known(target));
    } else {
      keys = await this.set.keys(target, this.access);
      algorithms = await this.set.algorithms(target, keys);
      this.reservations.delete(target);
    }
    const calls = this.set.calls({ keys, algorithms }, 1);
    if (calls.length > 0) await this.store.reset(calls);
  }

  private async held(ms: number, signal: AbortSignal, req: Req): Promise<boolean> {
    if (signal.aborted) return false;
    try {
      await this.hold(ms, signal);
      return !signal.aborted;
    } catch (error) {
      if (signal.aborted) return false;
      this.reporter.error(error, req);
      return true;
    }
  }

  /**
   * The units an admitted request holds that `giveBack` would return: 0 when it holds none or the
   * store cannot give units back.
   */
  heldUnits(req: Req): number {
    const reservation = this.reservations.get(req);
    if (reservation === undefined || !reservation.admitted || this.store.refund === undefined) return 0;
    return reservation.cost;
  }

  /**
   * Gives an admitted request's units back: a later sluice middleware refused the request, or its
   * client left before it ran (`giveBackEarlier`). Answers the units given back; never rejects.
   */
  giveBack(req: Req): Promise<number> {
    return this.refund(req);
  }

  /**
   * Gives an admitted request's units back (on stores with `refund`): a held request whose client
   * left, or a response that does not count. Answers the units given back; never rejects.
   */
  private async refund(req: Req): Promise<number> {
    const reservation = this.reservations.get(req);
    const store = this.store;
    if (reservation === undefined || !reservation.admitted || store.refund === undefined) return 0;
    this.reservations.delete(req);
    const cost = reservation.cost;
    if (cost === 0) return 0;
    try {
      await store.refund(this.set.calls(reservation, cost), undefined);
      return cost;
    } catch (error) {
      this.reporter.error(error, req);
      return 0;
    }
  }

  private failed(error: unknown, req: Req): Decision | undefined {
    this.reporter.error(error, req);
    return this.failOpen ? undefined : STORE_DOWN;
  }
}

/**
 * A queue admission longer than `maxDelay`, as a refusal: each limit that would have held the
 * request longer refuses with that wait as its `retryAfter`, so its RateLimit reset and
 * `Retry-After` name the same instant, and counts the `refunded` units as left.
 */
function overlong(decision: Decision, maxDelay: number, refunded: number): Decision {
  const refuse = (d: Decision): Decision => ({
    ...d,
    allowed: false,
    remaining: Math.min(d.limit, d.remaining + refunded),
    retryAfter: d.delay,
    delay: 0,
    reason: 'rate-limited',
  });
  // Only limits that queued the request (delay > 0) had units to give back.
  const back = (d: Decision): Decision =>
    d.delay > 0 ? { ...d, remaining: Math.min(d.limit, d.remaining + refunded) } : d;
  return {
    ...refuse(decision),
    limits: decision.limits.map((d) => (d.delay > maxDelay ? refuse(d) : back(d))),
  };
}

/** `undefined` for "no limit applied"; a single limit's own decision (no `limits`) did apply. */
function applied(decision: Decision | undefined): Decision | undefined {
  return decision === NOT_LIMITED ? undefined : decision;
}

/** The decision of a batch the store answered, its shadow limits' decisions marked (as `Limiter` does). */
function combined(calls: readonly LimitCall[], decisions: readonly Decision[]): Decision {
  return combine(decisions.map((decision, i) => (calls[i]!.shadow === true ? shadowed(decision) : decision)));
}

/** `count` as a predicate (`undefined`: every response counts). */
function countOption<Req>(
  count: CountWhen<Req> | undefined,
): ((req: Req, outcome: ResponseOutcome) => boolean) | undefined {
  if (typeof count === 'function') return count;
  const when = oneOfOption('count', count ?? 'all', COUNT_WHEN);
  return when === 'all' ? undefined : when === 'failed' ? FAILED : SUCCESSFUL;
}
