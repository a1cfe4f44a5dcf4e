import { ErrorCode, Limiter, SluiceError, type Store, slidingWindowLog } from '@sluice/core';
import { bindName } from '@sluice/core/adapter';

/**
 * What `ThrottlerStorage.increment` answers (`ThrottlerStorageRecord` of @nestjs/throttler),
 * declared here: @nestjs/throttler is an optional peer, so sluice's declarations must not import it.
 */
export interface ThrottlerRecord {
  totalHits: number;
  /** Seconds until the window ends. */
  timeToExpire: number;
  isBlocked: boolean;
  /** Seconds until a blocked key may try again; 0 when not blocked. */
  timeToBlockExpire: number;
}

export interface SluiceThrottlerStorageOptions {
  /** Where the counters live: a `RedisStore` shared by the fleet (or a `MemoryStore`). */
  store: Store;
}

/**
 * A `ThrottlerStorage` for @nestjs/throttler over a sluice store (it has the interface's shape;
 * its declaration does not name the interface, so apps without @nestjs/throttler compile): each
 * hit is one atomic check (one Lua script on a `RedisStore`), so a flood admits exactly `limit`
 * per `ttl`, where a get-then-set storage lets concurrent requests read the same count
 * (nestjs/throttler#1303: ~400 of 1000 flood requests got through a limit of 100).
 *
 * It counts as @nestjs/throttler's own storage does: each hit expires `ttl` after it happened (a
 * sliding window log, not windows aligned to the clock, which let a burst across a boundary
 * through twice), and a key that goes over is blocked for `blockDuration` from that hit
 * (`timeToBlockExpire`), whatever the window; when the block ends the key starts afresh (the hits
 * before it are forgotten, as the default storage zeroes its count). One difference, kept: `timeToExpire`
 * (`X-RateLimit-Reset`) is when every counted hit has expired, where the default storage counts
 * down from the first hit of a period and starts again at `ttl`; telling the oldest hit's expiry
 * would cost a second store call per request.
 * @example
 * ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 100 }], storage: new SluiceThrottlerStorage({ store: redisStore }) })
 */
export class SluiceThrottlerStorage {
  private readonly store: Store;
  /** One limiter per throttler name, ttl, limit and block (a throttler's settings can vary per route). */
  private readonly limiters = new Map<string, Limiter>();

  constructor(options: SluiceThrottlerStorageOptions) {
    if (options?.store === undefined || typeof options.store.consume !== 'function') {
      throw new SluiceError(
        ErrorCode.MISSING_OPTION,
        'SluiceThrottlerStorage needs a store: { store: redisStore }',
        {
          option: 'store',
          value: options?.store,
        },
      );
    }
    this.store = options.store;
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerRecord> {
    const decision = await this.limiterFor(throttlerName, ttl, limit, blockDuration).check(key);
    return {
      totalHits: decision.allowed ? limit - decision.remaining : limit + 1,
      timeToExpire: Math.ceil(decision.resetAfter / 1000),
      isBlocked: !decision.allowed,
      timeToBlockExpire: decision.allowed ? 0 : Math.max(1, Math.ceil(decision.retryAfter / 1000)),
    };
  }

  private limiterFor(name: string, ttl: number, limit: number, blockDuration: number): Limiter {
    const id = `${name}\n${ttl}\n${limit}\n${blockDuration}`;
    let limiter = this.limiters.get(id);
    if (limiter === undefined) {
      const algorithm = bindName(slidingWindowLog({ limit, window: ttl }), `throttler:${name}`);
      limiter = new Limiter({
        // The name is bound into the stored key: two throttlers with equal settings never share counts.
        // A block of 0 (or less) is none: the hit over the limit is refused, the next one counted.
        // A block forgets the hits before it (`reset`), as the default storage zeroes its count
        // when a block ends: a block shorter than `ttl` lets the key start afresh.
        limits: [
          {
            name,
            algorithm,
            ...(blockDuration > 0 ? { block: { duration: blockDuration, reset: true } } : {}),
          },
        ],
        store: this.store,
      });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}
