import type { Decision } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { MemoryStore } from '../memory-store.js';
import type { MaybePromise, Store } from '../store.js';
import { assertKey, assertKnownOptions, functionOption, integerOption, requireOption } from '../validate.js';
import { acquireLease, requireLeases } from './acquire-lease.js';
import { nameOption, readNow } from './common-options.js';
import type { Lease } from './lease.js';
import { leaseId } from './lease-id.js';
import type { LeaseAcquire, LeaseStore } from './lease-store.js';

export interface ConcurrencyLimiterOptions {
  /** Most requests in flight at once per key. Integer ≥ 1. */
  limit: number;
  /**
   * How long a lease may be held before it counts as lost (a crashed process never releases):
   * longer than your slowest request. ms or `'60s'`…
   * @default '60s'
   */
  ttl?: Duration;
  /**
   * The longest `retryAfter` a refusal reports. A refusal's real wait is unknowable (a slot frees
   * when some request finishes), so it is a short hint, cut to the oldest lease's expiry if sooner.
   * @default '1s'
   */
  retryAfter?: Duration;
  /**
   * Shown in `decision.policy`, and the lease space in the store: limiters with different names
   * never share leases, limiters with the same name on the same store do.
   * @default 'concurrency'
   */
  name?: string;
  /** Where leases live; it must support leases (`store.leases`). @default a new `MemoryStore()` */
  store?: Store;
  /** Told when a release fails in the store (the lease then expires after `ttl`). @default none */
  onError?: (error: unknown) => void;
}

export interface AcquireOptions {
  /** The request's time, ms. @default the store's clock */
  now?: number;
}

const KNOWN = [
  'limit',
  'ttl',
  'retryAfter',
  'name',
  'store',
  'onError',
] as const satisfies readonly (keyof ConcurrencyLimiterOptions)[];
const ACQUIRE_KNOWN = ['now'] as const satisfies readonly (keyof AcquireOptions)[];

/**
 * Stripe's concurrent requests limiter: at most `limit` requests in flight per key, for endpoints
 * that are expensive rather than frequent. A request takes a lease when it starts and releases it
 * when it ends; refusals have reason `'concurrency'` (HTTP 429).
 * @example
 * const limiter = new ConcurrencyLimiter({ limit: 20, ttl: '60s' });
 * const lease = await limiter.acquire(`token:${token}`);
 * if (!lease.decision.allowed) return reply429(lease.decision);
 * try { await work(); } finally { await lease.release(); }
 */
export class ConcurrencyLimiter {
  readonly limit: number;
  /** ms. */
  readonly ttl: number;
  /** ms. */
  readonly retryAfter: number;
  readonly name: string;
  readonly store: Store;
  private readonly leases: LeaseStore;
  private readonly onError: ((error: unknown) => void) | undefined;

  constructor(options: ConcurrencyLimiterOptions) {
    assertKnownOptions('ConcurrencyLimiter', options, KNOWN);
    this.limit = integerOption('limit', requireOption('limit', options.limit));
    this.ttl = parseDuration('ttl', options.ttl ?? '60s');
    this.retryAfter = parseDuration('retryAfter', options.retryAfter ?? '1s');
    this.name = nameOption(options.name ?? 'concurrency');
    this.store = options.store ?? new MemoryStore();
    this.leases = requireLeases('ConcurrencyLimiter', this.store);
    this.onError = functionOption('onError', options.onError);
  }

  /** Takes a slot for `key`, or refuses. Release the lease when the request ends, however it ends. */
  acquire(key: string, options?: AcquireOptions): MaybePromise<Lease> {
    assertKey(key);
    const now = readNow(options, ACQUIRE_KNOWN);
    return acquireLease(this.leases, this.call(key, leaseId()), now, this.onError);
  }

  /** What `acquire` would answer now, without taking a slot. */
  peek(key: string, options?: AcquireOptions): MaybePromise<Decision> {
    assertKey(key);
    return this.leases.peek(this.call(key, ''), readNow(options, ACQUIRE_KNOWN));
  }

  /** Forgets every lease held for `key`. */
  reset(key: string): MaybePromise<void> {
    assertKey(key);
    return this.leases.reset(this.name, key);
  }

  private call(key: string, id: string): LeaseAcquire {
    return {
      space: this.name,
      key,
      id,
      limit: this.limit,
      ttl: this.ttl,
      retryAfter: this.retryAfter,
      policy: this.name,
    };
  }
}
