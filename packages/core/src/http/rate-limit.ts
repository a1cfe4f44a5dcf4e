import { setTimeout as sleep } from 'node:timers/promises';
import { type Decision, decide } from '../decision.js';
import { parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { type LimitDefinition, Limiter, limitCall } from '../limiter.js';
import { MemoryStore } from '../memory-store.js';
import type { LimitCall, MaybePromise } from '../store.js';
import {
  assertKnownOptions,
  booleanOption,
  functionOption,
  integerOption,
  oneOfOption,
} from '../validate.js';
import { type ClientResponse, clientLeft, watchClient } from './client.js';
import { DecisionHooks } from './decision-hooks.js';
import { HEADER_FORMATS, RateLimitHeaders } from './headers.js';
import { type AddressList, addressList } from './ip.js';
import { byIp, type KeyFunction, type RequestAccess } from './keys.js';
import { HTTP_OPTIONS, type HttpLimit, type HttpLimitOptions } from './options.js';
import { type Refusal, refusal } from './problem.js';
import { type AdapterDefaults, Reporter, type RequestAccessBase } from './reporter.js';

/** The decision when the store failed and the policy is `'deny'`: 503, `Retry-After: 1`. */
const STORE_DOWN: Decision = decide(false, 0, 0, 0, 1000, 0, '', 'store-unavailable');
/** The decision when every limit was skipped for a request (no key). */
const NOT_LIMITED: Decision = decide(true, 0, 0, 0, 0, 0, '', undefined);
const SF_STRING = /^[\x20-\x7e]+$/;

/**
 * The request-to-decision logic both adapters share, compiled once from the options: keys, skip,
 * allow-list, cost, one layered `Limiter.check` per request, the failure policy, the delay mode and
 * the header strings. Adapters only move its answers into their response objects.
 */
export class HttpLimiter<Req> {
  readonly limiter: Limiter;
  readonly headers: RateLimitHeaders;
  /** The options as given, for adapters that merge per-route options into global ones. */
  readonly options: HttpLimitOptions<Req>;
  readonly delayMode: boolean;
  /** ms. */
  readonly maxDelay: number;
  private readonly access: RequestAccess<Req>;
  private readonly keys: KeyFunction<Req>[];
  /** `name:` per limit: the limit's name is part of its stored key. */
  private readonly skip: ((req: Req) => boolean) | undefined;
  private readonly allow: AddressList | undefined;
  private readonly cost: number;
  private readonly costOf: ((req: Req) => number) | undefined;
  private readonly failOpen: boolean;
  private readonly reporter: Reporter<Req>;
  private readonly hooks: DecisionHooks<Req>;
  private readonly hold: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(
    where: string,
    options: HttpLimitOptions<Req>,
    access: RequestAccessBase<Req>,
    defaults: AdapterDefaults<Req>,
    adapterOptions: readonly string[] = [],
  ) {
    assertKnownOptions(where, options, [...HTTP_OPTIONS, ...adapterOptions]);
    this.options = options;
    const limits = httpLimits(options);
    // Limiter binds each limit's name into its algorithm's fingerprint (not into the key).
    this.limiter = new Limiter({
      limits: limits.map(({ name, algorithm, enforce, block }) => {
        const limit: LimitDefinition = { algorithm };
        if (name !== undefined) limit.name = name;
        if (enforce !== undefined) limit.enforce = enforce;
        if (block !== undefined) limit.block = block;
        return limit;
      }),
      store: options.store ?? new MemoryStore(),
    });
    for (const [i, limit] of this.limiter.limits.entries()) {
      if (!SF_STRING.test(limit.name)) {
        throw new SluiceError(
          ErrorCode.INVALID_OPTION,
          `limits[${i}].name must be printable ASCII (it is sent in RateLimit headers); got ${describeValue(limit.name)}`,
          { option: `limits[${i}].name`, value: limit.name },
        );
      }
    }
    this.keys = limits.map((limit, i) => {
      if (limit.key !== undefined && typeof limit.key !== 'function') {
        throw new SluiceError(
          ErrorCode.INVALID_OPTION,
          `limits[${i}].key must be a key function such as byIp(); got ${describeValue(limit.key)}`,
          { option: `limits[${i}].key`, value: limit.key },
        );
      }
      return limit.key ?? byIp();
    });
    const format = options.headers ?? 'ietf';
    this.headers = new RateLimitHeaders(
      format === false ? false : oneOfOption('headers', format, HEADER_FORMATS),
      this.limiter.limits,
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
    this.delayMode = oneOfOption('onLimit', options.onLimit ?? 'refuse', ['refuse', 'delay']) === 'delay';
    this.maxDelay = parseDuration('maxDelay', options.maxDelay ?? '5s');
    if (!this.delayMode) {
      const queue = this.limiter.limits.findIndex((limit) => limit.algorithm.kind === 'leaky-bucket-queue');
      if (queue !== -1) {
        throw new SluiceError(
          ErrorCode.INVALID_OPTION,
          `limits[${queue}] uses leakyBucketQueue(), which asks requests to wait; set onLimit: 'delay' so the middleware holds them`,
          { option: 'onLimit', value: options.onLimit },
        );
      }
    }
    this.failOpen =
      oneOfOption('storeFailure', options.storeFailure ?? 'allow', ['allow', 'deny']) === 'allow';
    this.reporter = new Reporter(options, defaults);
    this.hooks = new DecisionHooks(options, this.limiter.limits, (error, req) =>
      this.reporter.error(error, req),
    );
    this.hold = functionOption('hold', options.hold) ?? ((ms, signal) => sleep(ms, undefined, { signal }));
    this.access = this.reporter.access(access);
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
    let result: MaybePromise<Decision>;
    try {
      if (this.skip !== undefined && this.skip(req) === true) return undefined;
      if (this.allow?.has(this.access.ip(req))) return undefined;
      result = this.check(req, this.costOf === undefined ? this.cost : this.costOf(req));
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

  private check(req: Req, cost: number): MaybePromise<Decision> {
    const options = cost === 1 ? undefined : { cost };
    if (this.keys.length === 1) {
      const key = this.key(0, req);
      return key === undefined ? NOT_LIMITED : this.limiter.check(key, options);
    }
    const keys: (string | undefined)[] = new Array(this.keys.length);
    let any = false;
    for (let i = 0; i < keys.length; i++) {
      keys[i] = this.key(i, req);
      any ||= keys[i] !== undefined;
    }
    return any ? this.limiter.check(keys, options) : NOT_LIMITED;
  }

  private key(i: number, req: Req): string | undefined {
    const key = this.keys[i]!(req, this.access);
    if (key === undefined) return undefined;
    if (typeof key !== 'string') {
      throw new SluiceError(
        ErrorCode.INVALID_KEY,
        `limits[${i}].key must return a string or undefined; got ${describeValue(key)}`,
        { option: `limits[${i}].key`, value: key },
      );
    }
    return key;
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

  /** Gives a held request's units back (on stores with `refund`); answers the units given back. */
  private async refund(req: Req): Promise<number> {
    const store = this.limiter.store;
    if (store.refund === undefined) return 0;
    try {
      const cost = this.costOf === undefined ? this.cost : this.costOf(req);
      const calls: LimitCall[] = [];
      for (let i = 0; i < this.keys.length; i++) {
        const key = this.key(i, req);
        if (key !== undefined) calls.push(limitCall(this.limiter.limits[i]!, key, cost));
      }
      await store.refund(calls, undefined);
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
function applied(decision: Decision): Decision | undefined {
  return decision === NOT_LIMITED ? undefined : decision;
}

/** The limits of the options, from `limits` or from the single-limit shorthand. */
export function httpLimits<Req>(options: HttpLimitOptions<Req>): readonly HttpLimit<Req>[] {
  if (options === null || typeof options !== 'object') return [];
  const shorthand = options.algorithm !== undefined;
  if (shorthand === (options.limits !== undefined)) {
    throw new SluiceError(
      options.limits === undefined ? ErrorCode.MISSING_OPTION : ErrorCode.INVALID_OPTION,
      'give either limits (one or several { name, key, algorithm }) or the single-limit algorithm (with key and name), not both',
      { option: options.limits === undefined ? 'algorithm' : 'limits', value: options.limits },
    );
  }
  if (!shorthand) {
    if (options.key !== undefined || options.name !== undefined) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        'key and name belong to each limit when limits is given: limits: [{ name, key, algorithm }]',
        { option: options.key !== undefined ? 'key' : 'name' },
      );
    }
    if (Array.isArray(options.limits)) {
      options.limits.forEach((limit, i) => {
        assertKnownOptions(`limits[${i}]`, limit, [
          'name',
          'key',
          'algorithm',
          'enforce',
          'block',
        ] satisfies (keyof HttpLimit<Req>)[]);
      });
    }
    return options.limits!;
  }
  const limit: HttpLimit<Req> = { algorithm: options.algorithm! };
  if (options.key !== undefined) limit.key = options.key;
  if (options.enforce !== undefined) limit.enforce = options.enforce;
  if (options.block !== undefined) limit.block = options.block;
  if (options.name !== undefined) limit.name = options.name;
  return [limit];
}
