import { type Decision, decide } from '../decision.js';
import { combineCalls, type Limiter } from '../limiter.js';
import { andThen } from '../maybe.js';
import type { MaybePromise, Store } from '../store.js';
import { assertCost } from '../validate.js';
import { type ClientResponse, clientLeft, leftOnArrival, watchClient } from './client.js';
import { DelayMode, type Hold } from './delay-mode.js';
import type { GetHeader, RateLimitHeaders, SetHeader } from './headers.js';
import type { RequestLimits } from './limit-set.js';
import type { HttpLimitOptions } from './options.js';
import { type Refusal, refusal } from './problem.js';
import { type RateLimitSettings, rateLimitSettings } from './rate-limit-settings.js';
import type { AdapterDefaults, RequestAccessBase } from './reporter.js';
import { Reservations } from './reservations.js';

export { httpLimits } from './limit-set.js';

/** The decision when the store failed and the policy is `'deny'`: 503, `Retry-After: 1`. */
const STORE_DOWN: Decision = decide(false, 0, 0, 0, 1000, 0, '', 'store-unavailable');
/** The decision when every limit was skipped for a request (no key). */
const NOT_LIMITED: Decision = decide(true, 0, 0, 0, 0, 0, '', undefined);

/**
 * The request-to-decision logic every adapter shares, compiled once from the options
 * (`rateLimitSettings`): keys, skip, allow-list, cost, plans, one layered store call per request,
 * the failure policy, the hold (`DelayMode`), the header strings, and what the app may do
 * afterwards with what a request reserved (`Reservations`: `settle`, `count`, the give-back of a
 * request that never ran), `peek` and `reset`. Adapters only move its answers into their
 * response objects.
 */
export class HttpLimiter<Req> {
  /** The `Limiter` of fixed limits; `undefined` when a limit chooses its algorithm per request. */
  readonly limiter: Limiter | undefined;
  readonly store: Store;
  readonly headers: RateLimitHeaders;
  /** The options as given, for adapters that merge per-route options into global ones. */
  readonly options: HttpLimitOptions<Req>;
  /** Whether a response's outcome decides if its units count (`count` other than `'all'`). */
  readonly countsOutcome: boolean;
  private readonly settings: RateLimitSettings<Req>;
  /** What each request reserved, until its response's outcome or the app settles it. */
  private readonly reservations: Reservations<Req>;
  private readonly delay: DelayMode<Req>;

  constructor(
    where: string,
    options: HttpLimitOptions<Req>,
    access: RequestAccessBase<Req>,
    defaults: AdapterDefaults<Req>,
    adapterOptions: readonly string[] = [],
  ) {
    const settings = rateLimitSettings(where, options, access, defaults, adapterOptions);
    this.settings = settings;
    this.options = options;
    this.store = settings.store;
    this.limiter = settings.set.limiter;
    this.headers = settings.headers;
    this.countsOutcome = settings.counts !== undefined;
    this.reservations = new Reservations(settings.store, settings.set, settings.reporter, settings.counts);
    this.delay = new DelayMode(settings.delayMode, settings.maxDelay, settings.hold, settings.reporter);
  }

  /**
   * A request's whole passage through the limits, the order every adapter follows: the check, then,
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
    if (leftOnArrival(response)) return null;
    const result = this.evaluate(req);
    // Nothing ran between the request's arrival and a synchronous answer: only a hold needs watching.
    if (!(result instanceof Promise)) return this.acted(req, result, response);
    // Whether the client left while the store answered is read once the answer arrives (a
    // watcher, an AbortSignal and a 'close' listener per request, was 5% of a Fastify server's
    // time on Redis); only a hold, which must end as soon as the client leaves, is watched.
    return result.then((decision) => {
      if (clientLeft(response)) return this.reservations.abandon(req, decision);
      return this.acted(req, decision, response);
    });
  }

  /** The decision to act on: `decision` itself, unless delay mode holds the request first. */
  private acted(
    req: Req,
    decision: Decision | undefined,
    response: ClientResponse,
  ): MaybePromise<Decision | undefined | null> {
    if (decision === undefined) return undefined;
    const hold = this.delay.next(decision);
    if (hold === undefined) return decision;
    return this.held(req, decision, hold, response);
  }

  /**
   * Delay mode's hold, while the client is watched: a queue's delay waited out, then the request
   * proceeds; a refusal's wait, then one more check (after which only a queue's delay is held); a
   * queue's delay past `maxDelay` refused at once. A client that leaves while held gets `null`, and
   * what its request took goes back.
   */
  private async held(
    req: Req,
    decision: Decision,
    first: Hold,
    response: ClientResponse,
  ): Promise<Decision | undefined | null> {
    const delay = this.delay;
    const reservations = this.reservations;
    const client = watchClient(response);
    const signal = client.signal;
    try {
      let current = decision;
      let hold = first;
      for (;;) {
        if (hold.kind === 'too-long') return delay.tooLong(current, await reservations.giveBack(req));
        if (!(await delay.held(hold.ms, signal, req))) {
          // A queued request took its units; a refused one took none.
          if (hold.kind === 'queue') await reservations.giveBack(req);
          return null;
        }
        if (hold.kind === 'queue') return current;
        const again = await this.evaluate(req);
        if (signal.aborted) return reservations.abandon(req, again);
        if (again === undefined || !again.allowed) return again;
        const next = delay.next(again);
        if (next === undefined) return again;
        current = again;
        hold = next;
      }
    } finally {
      client.stop();
    }
  }

  /**
   * Checks a request against every limit in one store call. `undefined` means "not limited":
   * skipped, allow-listed, no key for any limit, or the store failed under `storeFailure: 'allow'`.
   * Never throws or rejects: failures go to `onError` and the failure policy.
   */
  evaluate(req: Req): MaybePromise<Decision | undefined> {
    let result: MaybePromise<Decision | undefined>;
    try {
      const cost = this.costOf(req);
      if (cost instanceof Promise) result = cost.then((units) => this.check(req, units));
      else result = this.check(req, cost);
    } catch (error) {
      return this.failed(error, req);
    }
    if (result instanceof Promise) return result.then(applied, (error: unknown) => this.failed(error, req));
    return applied(result);
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
    this.settings.hooks.run(req, decision);
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
    const limits = this.settings.set;
    if (!limits.planned) return this.headers.write(decision, res, set, get);
    const reservation = this.reservations.get(req);
    return this.headers.write(decision, res, set, get, (name) => {
      const i = limits.limits.findIndex((limit) => limit.name === name);
      if (i === -1) return undefined;
      return reservation?.algorithms[i] ?? limits.limits[i]!.plans?.known(reservation?.keys[i] ?? '');
    });
  }

  /**
   * The response of an admitted request ended: under `count`, a response that does not count
   * gives its units back. A throwing `count` function is reported and the units stay counted.
   */
  outcome(req: Req, statusCode: number, finished: boolean): void {
    this.reservations.outcome(req, statusCode, finished);
  }

  /**
   * Settles an admitted request to its actual cost, once it is known (tokens an LLM answer used):
   * the difference from what it reserved is given back (`Store.refund`) or taken (`Store.charge`,
   * which never drives a limit below zero). May be called again with a new total. Resolves once
   * the store has it; never rejects (store failures go to `onError`). A request that was not
   * limited (skipped, refused, no key) has nothing to settle.
   * @param actual the request's whole cost, an integer ≥ 0
   */
  settle(req: Req, actual: number): Promise<void> {
    return this.reservations.settle(req, actual);
  }

  /**
   * What the limits have for this request, without consuming: the combined Decision for the
   * request's cost, or `undefined` when it would not be limited (skipped, allow-listed, no key).
   * Rejects when the store or a key, skip, cost or plan function fails (the app asked).
   */
  async peek(req: Req): Promise<Decision | undefined> {
    const cost = await this.costOf(req);
    if (cost === undefined) return undefined;
    const { set, access } = this.settings;
    const calls = set.calls(await set.request(req, access), cost);
    if (calls.length === 0) return undefined;
    return combineCalls(calls, await this.store.peek(calls, undefined));
  }

  /**
   * Forgets what the limits have for a request's keys, or for one key given as a string (every
   * limit's state on that key; a limit whose plan is per request forgets the plan this process
   * last used for the key). For tests and support tools (express-rate-limit's `resetKey`).
   */
  async reset(target: Req | string): Promise<void> {
    const set = this.settings.set;
    let limits: RequestLimits;
    if (typeof target === 'string') {
      limits = {
        keys: set.limits.map(() => target),
        algorithms: set.limits.map((limit) => limit.algorithm ?? limit.plans!.known(target)),
      };
    } else {
      limits = await set.request(target, this.settings.access);
      this.reservations.forget(target);
    }
    const calls = set.calls(limits, 1);
    if (calls.length > 0) await this.store.reset(calls);
  }

  /**
   * The units an admitted request reserved that `giveBack` would return: 0 when it has none or
   * the store cannot give units back.
   */
  reservedUnits(req: Req): number {
    return this.reservations.units(req);
  }

  /**
   * Gives an admitted request's units back: a later sluice middleware refused the request, or its
   * client left before it ran (`giveBackEarlier`). Answers the units given back; never rejects.
   */
  giveBack(req: Req): Promise<number> {
    return this.reservations.giveBack(req);
  }

  /**
   * The units a request takes, or `undefined` when no limit applies to it (skipped,
   * allow-listed): what `evaluate` and `peek` both ask first. Throws (or rejects) when `skip` or
   * `cost` fails or the cost is not an integer ≥ 1.
   */
  private costOf(req: Req): MaybePromise<number | undefined> {
    const { skip, allow, access, costOf, cost } = this.settings;
    return andThen(skip === undefined ? false : skip(req), (skipped) => {
      if (skipped === true) return undefined;
      if (allow?.has(access.ip(req))) return undefined;
      if (costOf === undefined) return cost;
      return andThen(costOf(req), (units) => {
        assertCost(units);
        return units;
      });
    });
  }

  /**
   * The request's one store call, for every limit with a key (`LimitSet.consume`); what it took
   * is reserved. `undefined` cost: no limit applies to the request.
   */
  private check(req: Req, cost: number | undefined): MaybePromise<Decision | undefined> {
    if (cost === undefined) return undefined;
    const set = this.settings.set;
    return andThen(set.request(req, this.settings.access), (limits) => {
      if (limits.keys.every(isUndefined)) return NOT_LIMITED;
      return andThen(set.consume(limits, cost), (decision) => {
        // A refused request is kept only under plans: its headers name the plans it was refused by.
        if (decision.allowed) this.reservations.reserve(req, limits.keys, limits.algorithms, cost);
        else if (set.planned) this.reservations.reserve(req, limits.keys, limits.algorithms, 0);
        return decision;
      });
    });
  }

  private failed(error: unknown, req: Req): Decision | undefined {
    this.settings.reporter.error(error, req);
    return this.settings.failOpen ? undefined : STORE_DOWN;
  }
}

/** `undefined` for "no limit applied"; a single limit's own decision (no `limits`) did apply. */
function applied(decision: Decision | undefined): Decision | undefined {
  return decision === NOT_LIMITED ? undefined : decision;
}

function isUndefined(key: string | undefined): boolean {
  return key === undefined;
}
