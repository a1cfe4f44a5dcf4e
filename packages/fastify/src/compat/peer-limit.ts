import {
  type Algorithm,
  type Decision,
  ErrorCode,
  Limiter,
  SluiceError,
  type Store,
  tokenBucket,
} from '@sluice/core';
import { type AdapterDefaults, describeValue, HttpLimiter } from '@sluice/core/adapter';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { fastifyAccess } from '../access.js';
import { rateLimitHook, type SluiceHook } from '../hook.js';
import type { SluiceOptions } from '../options.js';
import { type PeerState, writeAdmittedHeaders, writeRefusedHeaders } from './peer-headers.js';
import { defaultPeerKey } from './peer-key.js';
import { type PeerParams, retryWords } from './peer-params.js';

/** A key as @fastify/rate-limit's `keyGenerator` may answer it. */
type PeerKey = string | number;

/** What `app.createRateLimit()`'s check answers, as @fastify/rate-limit's does. */
export type PeerCheck =
  | { isAllowed: true; key: PeerKey }
  | {
      isAllowed: false;
      key: PeerKey;
      max: number;
      timeWindow: number;
      remaining: number;
      ttl: number;
      ttlInSeconds: number;
      isExceeded: boolean;
      isBanned: boolean;
    };

/** What a request resolved for one limit: its key and, once the plan ran, its max and window. */
interface Resolved {
  /** As the key generator answered it (a number stays one for `allowList`, `max`, the hooks). */
  key: Promise<PeerKey> | PeerKey;
  allowed?: boolean;
  max?: number;
  timeWindow?: number;
  /** The error a key, plan or store failure threw (answered as the peer answers it, without `skipOnError`). */
  error?: unknown;
}

const HOOK_NAME = 'fastifyRateLimit';

/**
 * The longest block sluice takes (`max` and `decay` together at most 1e13 ms, about 317 years):
 * where the doubling stops growing.
 */
const LONGEST_BLOCK = 10_000_000_000_000 - 1;

/**
 * One limit of @fastify/rate-limit (the plugin's, a route's, a decorator's) on sluice: a stepped
 * token bucket of `max` tokens refilled whole every `timeWindow` from a key's first request, the
 * window @fastify/rate-limit keeps (a strict bucket restarts it at each refusal:
 * `continueExceeding`; a block doubling at each block of a streak: `exponentialBackoff`), in one
 * sluice store, through core's lifecycle (`HttpLimiter`, the package's hook); and the peer's
 * headers, hooks, refusal (thrown to the app's error handler) and `ban` around it.
 */
export class PeerLimit {
  readonly params: PeerParams;
  readonly limiter: HttpLimiter<FastifyRequest>;
  private readonly name: string;
  /** Where `ban`'s strikes are counted: the limit's store, or a memory store beside an @fastify/rate-limit store. */
  private readonly strikeStore: Store;
  private readonly storeError: { readonly last?: unknown };
  private readonly requests = new WeakMap<FastifyRequest, Resolved>();
  private readonly buckets = new Map<string, Algorithm>();
  private readonly strikes = new Map<string, Limiter>();

  /**
   * @param name the limit's name: the state it counts in (`'global'`, one per route, per group)
   * @param strikeStore where `ban` counts refusals, when `store` is an @fastify/rate-limit store
   * @param storeError the latest failure the store reported itself (a `RedisStore` answers its
   *   failures with a decision, and reports the error apart)
   */
  constructor(
    name: string,
    params: PeerParams,
    store: Store,
    defaults: AdapterDefaults<FastifyRequest>,
    strikeStore: Store = store,
    storeError: { readonly last?: unknown } = {},
  ) {
    this.storeError = storeError;
    this.name = name;
    this.params = params;
    this.strikeStore = strikeStore;
    const { max, timeWindow, allowList } = params;
    const fixed = typeof max === 'number' && typeof timeWindow === 'number';
    const options: SluiceOptions = {
      name,
      key: (request) => {
        const key = this.resolved(request).key;
        return key instanceof Promise ? key.then(String) : String(key);
      },
      algorithm: fixed ? this.bucket(max, timeWindow) : (request) => this.plan(request),
      store,
      headers: false,
      // A key or plan function that throws fails the request with its error (500 through the
      // app's error handler), `skipOnError` or not, as there: it covers the store alone. The
      // stores answer their own failures (`'store-unavailable'`), for `admitted` to decide.
      storeFailure: 'deny',
      onError: (error, request) => {
        this.resolved(request).error = error;
      },
    };
    // A plan per request: asked on every request, as there (`max(req, key)` runs each time).
    if (!fixed) options.planCache = { ttl: 0 };
    if (allowList !== undefined) options.skip = (request) => this.allowListed(request);
    // An @fastify/rate-limit store backs off by itself.
    if (params.exponentialBackoff && typeof timeWindow === 'number' && strikeStore === store)
      // sluice doubles per block of a streak, forgotten a window after a block ends, where the
      // peer doubles at each refusal inside the window (a difference the migration doc lists).
      options.block = {
        duration: Math.max(1, timeWindow),
        factor: 2,
        max: LONGEST_BLOCK - Math.max(1, timeWindow),
        decay: Math.max(1, timeWindow),
      };
    this.limiter = new HttpLimiter<FastifyRequest>(
      `fromFastifyRateLimit ${name}`,
      options,
      fastifyAccess,
      defaults,
    );
  }

  /** The hook for a route: once per request per plugin (`ran`), the peer's headers on admission. */
  hook(ran: symbol): SluiceHook {
    const inner = rateLimitHook(
      this.limiter,
      (request, reply, decision) => this.refuse(request, reply, decision),
      false,
    );
    const hook: SluiceHook = (request, reply, done) => {
      const marks = request as unknown as Record<symbol, boolean>;
      if (marks[ran]) return done();
      marks[ran] = true;
      inner(request, reply, ((error?: Error) => {
        if (error !== undefined) return done(error);
        const after = this.admitted(request, reply);
        if (after instanceof Promise) after.then(() => done(), done);
        else done();
      }) as HookHandlerDoneFunction);
    };
    Object.defineProperty(hook, 'name', { value: HOOK_NAME });
    return hook;
  }

  /** `createRateLimit()`'s check: the peer's answer, counting (or only reading, `increment: false`). */
  async check(request: FastifyRequest, increment: boolean): Promise<PeerCheck> {
    const key = await this.resolved(request).key;
    if (this.params.allowList !== undefined && (await this.allowListed(request)))
      return { isAllowed: true, key };
    const answered = increment ? await this.limiter.evaluate(request) : await this.limiter.peek(request);
    const state = this.resolved(request);
    if (state.error !== undefined) throw state.error;
    const failed = answered?.reason === 'store-unavailable';
    if (failed && !this.params.skipOnError)
      throw this.storeError.last ?? new Error('the rate limit store is unavailable');
    // A failure let through reports an untouched window, as there.
    const decision = failed ? undefined : answered;
    const max = state.max ?? (await this.maxOf(request));
    const timeWindow = state.timeWindow ?? (await this.timeWindowOf(request));
    if (decision === undefined)
      return {
        isAllowed: false,
        key,
        max,
        timeWindow,
        remaining: max,
        ttl: 0,
        ttlInSeconds: 0,
        isExceeded: false,
        isBanned: false,
      };
    const ttl = decision.allowed ? decision.resetAfter : decision.retryAfter;
    return {
      isAllowed: false,
      key,
      max,
      timeWindow,
      remaining: decision.allowed ? decision.remaining : 0,
      ttl,
      ttlInSeconds: Math.ceil(ttl / 1000),
      isExceeded: !decision.allowed,
      isBanned: !decision.allowed && increment && (await this.banned(request, key, timeWindow)),
    };
  }

  /** The peer's key of a request, computed once (its `groupId` appended, as there). */
  private resolved(request: FastifyRequest): Resolved {
    let state = this.requests.get(request);
    if (state === undefined) {
      let key: Promise<PeerKey> | PeerKey;
      try {
        key = this.keyOf(request);
      } catch (error) {
        // Thrown once, answered once: every later read of the key rejects with the same error.
        key = Promise.reject(error);
        key.catch(() => {});
      }
      state = { key };
      this.requests.set(request, state);
    }
    return state;
  }

  private keyOf(request: FastifyRequest): Promise<PeerKey> | PeerKey {
    const { keyGenerator, ipv6Subnet } = this.params;
    const group = (request.routeOptions.config as { rateLimit?: { groupId?: unknown } } | undefined)
      ?.rateLimit?.groupId;
    const grouped = (key: PeerKey): PeerKey =>
      typeof group === 'string' && group !== '' ? `${key}${group}` : key;
    if (keyGenerator === undefined) return grouped(defaultPeerKey(request, ipv6Subnet));
    const key = keyGenerator(request);
    return key instanceof Promise ? key.then(grouped) : grouped(key);
  }

  private async allowListed(request: FastifyRequest): Promise<boolean> {
    const state = this.resolved(request);
    if (state.allowed === undefined) {
      const { allowList } = this.params;
      const key = await state.key;
      state.allowed =
        typeof allowList === 'function'
          ? Boolean(await allowList(request, key as string))
          : (allowList?.includes(key as string) ?? false);
    }
    return state.allowed;
  }

  private async maxOf(request: FastifyRequest): Promise<number> {
    const { max } = this.params;
    return typeof max === 'number' ? max : max(request, (await this.resolved(request).key) as string);
  }

  private async timeWindowOf(request: FastifyRequest): Promise<number> {
    const { timeWindow } = this.params;
    return typeof timeWindow === 'number'
      ? timeWindow
      : timeWindow(request, (await this.resolved(request).key) as string);
  }

  /** The bucket of a request whose `max` or `timeWindow` is a function. */
  private async plan(request: FastifyRequest): Promise<Algorithm> {
    const state = this.resolved(request);
    state.max = await this.maxOf(request);
    state.timeWindow = await this.timeWindowOf(request);
    return this.bucket(state.max, state.timeWindow);
  }

  /**
   * `max` tokens, all back `timeWindow` after a key's first request: @fastify/rate-limit's window.
   * A window under 1 ms is 1 ms. A `max` below 1 (0 refuses every request there, NaN from a
   * function admits every one) is refused: at registration when given as a number, and for a
   * function's answer the request fails with the error (500 through the app's error handler),
   * never limiting off in silence.
   */
  private bucket(max: number, timeWindow: number): Algorithm {
    if (!(Number.isFinite(max) && max >= 1)) {
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `fromFastifyRateLimit ${this.name}: max must be at least 1; got ${describeValue(max)} (max: 0 refuses every request in @fastify/rate-limit: give the route config.rateLimit: false and refuse it in its handler, or a max of 1 or more)`,
        { option: 'max', value: max },
      );
    }
    const capacity = Math.trunc(max);
    const interval = Number.isFinite(timeWindow) && timeWindow >= 1 ? Math.trunc(timeWindow) : 1;
    const id = `${capacity}/${interval}`;
    let bucket = this.buckets.get(id);
    if (bucket === undefined) {
      bucket = tokenBucket({
        capacity,
        refillInterval: interval,
        refill: 'stepped',
        strict: this.params.continueExceeding,
      });
      this.buckets.set(id, bucket);
    }
    return bucket;
  }

  /** After an admission: the peer's headers and `onExceeding` (not for an allow-listed key). */
  private admitted(request: FastifyRequest, reply: FastifyReply): Promise<void> | undefined {
    const { params } = this;
    const state = this.resolved(request);
    if (state.allowed === true) return undefined;
    return (async () => {
      const decision = request.rateLimit;
      // A store that answers its failures itself (RedisStore) let the request through uncounted.
      if (decision?.reason === 'store-unavailable' && !params.skipOnError)
        throw this.storeError.last ?? new Error('the rate limit store is unavailable');
      const max = state.max ?? (await this.maxOf(request));
      // No decision: the store failed and `skipOnError` let the request through (the peer then
      // reports an untouched window).
      const peer: PeerState =
        decision === undefined || decision.reason === 'store-unavailable'
          ? { max, remaining: max, resetSeconds: 0 }
          : { max, remaining: decision.remaining, resetSeconds: Math.ceil(decision.resetAfter / 1000) };
      writeAdmittedHeaders(reply, params.labels, params.addHeadersOnExceeding, peer);
      params.onExceeding(request, (await state.key) as string);
    })();
  }

  /**
   * A refusal as @fastify/rate-limit makes it: `onExceeded`, its headers, 403 past `ban`, and the
   * `errorResponseBuilder`'s value thrown to the app's error handler with the reply's status as it
   * was. A key, plan or store failure without `skipOnError` throws that error instead (500).
   */
  private async refuse(request: FastifyRequest, reply: FastifyReply, decision: Decision): Promise<never> {
    const { params } = this;
    // sluice's own Retry-After: the peer's is sent (or not) by `addHeaders`.
    reply.removeHeader('retry-after');
    const state = this.resolved(request);
    if (decision.reason === 'store-unavailable')
      throw state.error ?? new Error('the rate limit store is unavailable');
    const key = (await state.key) as string;
    const max = state.max ?? (await this.maxOf(request));
    params.onExceeded(request, key);
    const ttl = Math.max(0, decision.retryAfter);
    const resetSeconds = Math.ceil(ttl / 1000);
    writeRefusedHeaders(reply, params.labels, params.addHeaders, { max, remaining: 0, resetSeconds });
    const ban = await this.banned(request, key, state.timeWindow ?? (await this.timeWindowOf(request)));
    if (ban) params.onBanReach(request, key);
    throw params.errorResponseBuilder(request, {
      statusCode: ban ? 403 : 429,
      ban,
      max,
      ttl,
      after: retryWords(resetSeconds),
    });
  }

  /**
   * Whether this refusal is past `ban` refusals in the window: each refusal takes a strike from a
   * second bucket of `ban` strikes refilled every `timeWindow`, in the same store.
   */
  private async banned(request: FastifyRequest, key: PeerKey, timeWindow: number): Promise<boolean> {
    const { ban } = this.params;
    if (ban < 0) return false;
    if (ban === 0) return true;
    const interval = Number.isFinite(timeWindow) && timeWindow >= 1 ? Math.trunc(timeWindow) : 1;
    const id = `${ban}/${interval}`;
    let strikes = this.strikes.get(id);
    if (strikes === undefined) {
      strikes = new Limiter({
        limits: [
          {
            name: `${this.name} ban`,
            algorithm: tokenBucket({ capacity: ban, refillInterval: interval, refill: 'stepped' }),
          },
        ],
        store: this.strikeStore,
      });
      this.strikes.set(id, strikes);
    }
    void request;
    return !(await strikes.check(String(key))).allowed;
  }
}
