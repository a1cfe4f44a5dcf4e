import {
  ConcurrencyLimiter,
  type Decision,
  ErrorCode,
  type Lease,
  MemoryStore,
  type Store,
} from '@sluice/core';
import type { LeaseStore } from '@sluice/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

/** A memory-store lease is synchronous; this narrows the MaybePromise for the tests. */
function sync(lease: Lease | Promise<Lease>): Lease {
  if (lease instanceof Promise) throw new Error('expected a synchronous lease from the memory store');
  return lease;
}

describe('ConcurrencyLimiter on the memory store', () => {
  it('admits up to limit in flight, refuses the next with reason concurrency, and a release gives the slot back', () => {
    const limiter = new ConcurrencyLimiter({ limit: 2, ttl: '60s' });
    const a = sync(limiter.acquire('k', { now: 0 }));
    const b = sync(limiter.acquire('k', { now: 10 }));
    expect(a.decision).toMatchObject({
      allowed: true,
      limit: 2,
      remaining: 1,
      retryAfter: 0,
      policy: 'concurrency',
    });
    expect(b.decision).toMatchObject({ allowed: true, remaining: 0, resetAfter: 60_000 });
    const refused = sync(limiter.acquire('k', { now: 20 }));
    expect(refused.decision).toMatchObject({ allowed: false, limit: 2, remaining: 0, reason: 'concurrency' });
    expect(a.release(30)).toBe(true);
    expect(sync(limiter.acquire('k', { now: 40 })).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('keys are independent', () => {
    const limiter = new ConcurrencyLimiter({ limit: 1 });
    expect(sync(limiter.acquire('a', { now: 0 })).decision.allowed).toBe(true);
    expect(sync(limiter.acquire('b', { now: 0 })).decision.allowed).toBe(true);
    expect(sync(limiter.acquire('a', { now: 0 })).decision.allowed).toBe(false);
  });

  it('a double release is harmless: the second call frees nothing and does not free another request’s slot', () => {
    const limiter = new ConcurrencyLimiter({ limit: 2 });
    const a = sync(limiter.acquire('k', { now: 0 }));
    sync(limiter.acquire('k', { now: 0 }));
    expect(a.release(1)).toBe(true);
    expect(a.release(2)).toBe(false);
    const c = sync(limiter.acquire('k', { now: 3 }));
    expect(c.decision.allowed).toBe(true);
    // Two in flight again (b and c): the repeated release of a did not make room for a third.
    expect(sync(limiter.acquire('k', { now: 4 })).decision.allowed).toBe(false);
  });

  it('releasing a refused lease is a no-op', () => {
    const store = new MemoryStore();
    const limiter = new ConcurrencyLimiter({ limit: 1, store });
    sync(limiter.acquire('k', { now: 0 }));
    const refused = sync(limiter.acquire('k', { now: 0 }));
    expect(refused.release(1)).toBe(false);
    expect(store.leases.inspect('concurrency', 'k')).toHaveLength(1);
  });

  it('stale leases expire exactly ttl ms after they were taken, inside the acquire that counts', () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, ttl: 1000 });
    sync(limiter.acquire('k', { now: 5000 }));
    expect(sync(limiter.acquire('k', { now: 5999 })).decision).toMatchObject({
      allowed: false,
      retryAfter: 1,
    });
    expect(sync(limiter.acquire('k', { now: 6000 })).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('a release after the lease expired is harmless and frees nobody else', () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, ttl: 1000 });
    const lost = sync(limiter.acquire('k', { now: 0 }));
    const next = sync(limiter.acquire('k', { now: 1500 }));
    expect(next.decision.allowed).toBe(true);
    expect(lost.release(1600)).toBe(false);
    expect(sync(limiter.acquire('k', { now: 1700 })).decision.allowed).toBe(false);
  });

  it('a refusal hints a short retryAfter, cut to the oldest lease’s expiry when sooner', () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, ttl: '60s', retryAfter: '2s' });
    sync(limiter.acquire('k', { now: 0 }));
    expect(sync(limiter.acquire('k', { now: 100 })).decision.retryAfter).toBe(2000);
    expect(sync(limiter.acquire('k', { now: 59_000 })).decision.retryAfter).toBe(1000);
  });

  it('peek reports without taking a slot', () => {
    const limiter = new ConcurrencyLimiter({ limit: 2 });
    sync(limiter.acquire('k', { now: 0 }));
    expect(limiter.peek('k', { now: 1 })).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.peek('k', { now: 1 })).toMatchObject({ allowed: true, remaining: 1 });
    sync(limiter.acquire('k', { now: 2 }));
    expect(limiter.peek('k', { now: 3 })).toMatchObject({ allowed: false, reason: 'concurrency' });
  });

  it('reset forgets the leases of a key', () => {
    const limiter = new ConcurrencyLimiter({ limit: 1 });
    sync(limiter.acquire('k', { now: 0 }));
    limiter.reset('k');
    expect(sync(limiter.acquire('k', { now: 1 })).decision.allowed).toBe(true);
  });

  it('limiters with different names never share leases; the same name on one store does', () => {
    const store = new MemoryStore();
    const a = new ConcurrencyLimiter({ limit: 1, store, name: 'upload' });
    const b = new ConcurrencyLimiter({ limit: 1, store, name: 'export' });
    const a2 = new ConcurrencyLimiter({ limit: 1, store, name: 'upload' });
    expect(sync(a.acquire('k', { now: 0 })).decision.allowed).toBe(true);
    expect(sync(b.acquire('k', { now: 0 })).decision.allowed).toBe(true);
    expect(sync(a2.acquire('k', { now: 0 })).decision).toMatchObject({ allowed: false, policy: 'upload' });
  });

  it('memory is bounded: an emptied set is deleted, and maxKeys caps the sets held', () => {
    const store = new MemoryStore({ maxKeys: 3 });
    const limiter = new ConcurrencyLimiter({ limit: 1, store });
    const lease = sync(limiter.acquire('k', { now: 0 }));
    expect(store.leases.keyCount).toBe(1);
    lease.release(1);
    expect(store.leases.keyCount).toBe(0);
    for (let i = 0; i < 10; i++) sync(limiter.acquire(`key${i}`, { now: i }));
    expect(store.leases.keyCount).toBe(3);
    // The least recently written sets went first; the newest ones are still held.
    expect(store.leases.inspect('concurrency', 'key9')).toHaveLength(1);
    expect(store.leases.inspect('concurrency', 'key0')).toHaveLength(0);
  });

  it('eviction prefers a set whose leases have all expired over a live one', () => {
    const store = new MemoryStore({ maxKeys: 2 });
    const limiter = new ConcurrencyLimiter({ limit: 1, ttl: 1000, store });
    sync(limiter.acquire('stale', { now: 0 }));
    sync(limiter.acquire('live', { now: 900 }));
    sync(limiter.acquire('new', { now: 1500 }));
    expect(store.leases.inspect('concurrency', 'stale')).toHaveLength(0);
    expect(store.leases.inspect('concurrency', 'live')).toHaveLength(1);
    expect(store.leases.inspect('concurrency', 'new')).toHaveLength(1);
  });

  it('leases taken out of time order (replayed now) still expire by their own time', () => {
    const store = new MemoryStore();
    const limiter = new ConcurrencyLimiter({ limit: 3, ttl: 1000, store });
    sync(limiter.acquire('k', { now: 500 }));
    sync(limiter.acquire('k', { now: 100 }));
    sync(limiter.acquire('k', { now: 300 }));
    // Each lease goes stale ttl after its own time, not in the order it arrived.
    expect(limiter.peek('k', { now: 1099 })).toMatchObject({ allowed: false, remaining: 0 });
    expect(limiter.peek('k', { now: 1100 })).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.peek('k', { now: 1300 })).toMatchObject({ allowed: true, remaining: 2 });
    expect(limiter.peek('k', { now: 1499 })).toMatchObject({ remaining: 2 });
    expect(limiter.peek('k', { now: 1500 })).toMatchObject({ remaining: 3 });
  });

  it('never more than limit in flight and refused only when full, under random interleavings of acquire, release and time', () => {
    const step = fc.oneof(
      fc.record({
        op: fc.constant('acquire' as const),
        key: fc.constantFrom('a', 'b'),
        dt: fc.integer({ min: 0, max: 300 }),
      }),
      fc.record({
        op: fc.constant('release' as const),
        pick: fc.nat(),
        dt: fc.integer({ min: 0, max: 300 }),
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(step, { maxLength: 200 }), (limit, steps) => {
        const ttl = 1000;
        const limiter = new ConcurrencyLimiter({ limit, ttl });
        // The model: every lease we hold, with the time it was taken.
        let held: { key: string; at: number; lease: Lease }[] = [];
        let now = 0;
        for (const s of steps) {
          now += s.dt;
          held = held.filter((h) => h.at > now - ttl);
          if (s.op === 'acquire') {
            const live = held.filter((h) => h.key === s.key).length;
            const lease = sync(limiter.acquire(s.key, { now }));
            expect(lease.decision.allowed).toBe(live < limit);
            if (lease.decision.allowed) {
              expect(lease.decision.remaining).toBe(limit - live - 1);
              held.push({ key: s.key, at: now, lease });
            }
          } else if (held.length > 0) {
            const [gone] = held.splice(s.pick % held.length, 1);
            expect(gone!.lease.release(now)).toBe(true);
          }
        }
      }),
    );
  });
});

describe('ConcurrencyLimiter options and failures', () => {
  it('rejects bad options with coded errors', () => {
    expect(() => new ConcurrencyLimiter({ limit: 0 })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'limit' }),
    );
    expect(() => new ConcurrencyLimiter({ limit: 1.5 })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION }),
    );
    expect(() => new ConcurrencyLimiter({} as never)).toThrow(
      expect.objectContaining({ code: ErrorCode.MISSING_OPTION, option: 'limit' }),
    );
    expect(() => new ConcurrencyLimiter({ limit: 1, ttl: '1 fortnight' as never })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_DURATION, option: 'ttl' }),
    );
    expect(() => new ConcurrencyLimiter({ limit: 1, name: '' })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'name' }),
    );
    expect(() => new ConcurrencyLimiter({ limit: 1, limt: 2 } as never)).toThrow(
      expect.objectContaining({ code: ErrorCode.UNKNOWN_OPTION, option: 'limt' }),
    );
    const limiter = new ConcurrencyLimiter({ limit: 1 });
    expect(() => limiter.acquire(42 as never)).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_KEY }),
    );
    expect(() => limiter.acquire('k', { now: Number.NaN })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_TIME }),
    );
  });

  it('refuses a store without leases at creation', () => {
    const bare: Store = {
      consume: () => [],
      peek: () => [],
      reset: () => undefined,
      shutdown: () => undefined,
    };
    expect(() => new ConcurrencyLimiter({ limit: 1, store: bare })).toThrow(
      expect.objectContaining({ code: ErrorCode.UNSUPPORTED, option: 'store' }),
    );
  });

  it('an asynchronous store: acquire resolves, a store failure rejects with STORE_FAILURE, a failed release reports to onError and resolves false', async () => {
    const memory = new MemoryStore();
    let failAcquire = false;
    const leases: LeaseStore = {
      acquire: async (call, now): Promise<Decision> => {
        if (failAcquire) throw new Error('connection lost');
        return memory.leases.acquire(call, now);
      },
      peek: async (call, now) => memory.leases.peek(call, now),
      release: async () => {
        throw new Error('connection lost');
      },
      reset: async () => undefined,
    };
    const store: Store = { ...bareStore(), leases };
    const errors: unknown[] = [];
    const limiter = new ConcurrencyLimiter({ limit: 1, store, onError: (e) => errors.push(e) });
    const lease = await limiter.acquire('k', { now: 0 });
    expect(lease.decision.allowed).toBe(true);
    await expect(lease.release()).resolves.toBe(false);
    expect(errors).toHaveLength(1);
    expect(await lease.release()).toBe(false);
    expect(errors).toHaveLength(1);
    failAcquire = true;
    await expect(limiter.acquire('k', { now: 1 })).rejects.toMatchObject({ code: ErrorCode.STORE_FAILURE });
  });
});

function bareStore(): Store {
  return { consume: () => [], peek: () => [], reset: () => undefined, shutdown: () => undefined };
}
