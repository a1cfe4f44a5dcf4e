import {
  type Decision,
  fixedWindow,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';

describe('Limiter', () => {
  it('layered limits are all-or-nothing: a refusal by one consumes none', () => {
    const store = new MemoryStore();
    const wide = fixedWindow({ limit: 5, window: 1000 });
    const narrow = fixedWindow({ limit: 2, window: 1000 });
    const limiter = new Limiter({
      store,
      limits: [
        { name: 'wide', algorithm: wide },
        { name: 'narrow', algorithm: narrow },
      ],
    });
    expect(limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, policy: 'narrow', remaining: 1 });
    expect(limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 0 });
    const refused = limiter.check('k', { now: 0 });
    expect(refused).toMatchObject({
      allowed: false,
      policy: 'narrow',
      retryAfter: 1000,
      reason: 'rate-limited',
    });
    expect(store.inspect(limiter.limits[0]!.algorithm, 'k')).toEqual([2, 0]);
  });

  it('answers synchronously on the memory store', () => {
    const limiter = new Limiter({ algorithm: tokenBucket({ capacity: 1, refillInterval: '1s' }) });
    expect(limiter.check('k', { now: 0 })).not.toBeInstanceOf(Promise);
  });
});

describe("Limiter: the direct path (Store.consumeOne) never bypasses a store's own consume", () => {
  const algorithm = fixedWindow({ limit: 2, window: 1000 });

  it('a single limit on a store with consumeOne takes it, and answers as consume would', () => {
    const store = new MemoryStore();
    const one = vi.spyOn(MemoryStore.prototype, 'consumeOne');
    try {
      const limiter = new Limiter({ algorithm, store });
      expect(limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 1 });
      expect(one).toHaveBeenCalledTimes(1);
    } finally {
      one.mockRestore();
    }
    expect(new Limiter({ algorithm, store }).check('k', { now: 0 })).toMatchObject({ remaining: 0 });
  });

  it('a subclass that replaces consume (and not consumeOne) has its consume called', () => {
    const seen: number[] = [];
    class Counting extends MemoryStore {
      override consume(...args: Parameters<MemoryStore['consume']>) {
        seen.push(args[0].length);
        return super.consume(...args);
      }
    }
    const limiter = new Limiter({ algorithm, store: new Counting() });
    limiter.check('k', { now: 0 });
    limiter.check('k', { now: 0 });
    expect(seen).toEqual([1, 1]);
  });

  it('a spy on consume, before or after the limiter is made, sees every call', () => {
    const early = new MemoryStore();
    const earlySpy = vi.spyOn(early, 'consume');
    new Limiter({ algorithm, store: early }).check('k', { now: 0 });
    expect(earlySpy).toHaveBeenCalledTimes(1);
    const late = new MemoryStore();
    const limiter = new Limiter({ algorithm, store: late });
    const lateSpy = vi.spyOn(late, 'consume');
    limiter.check('k', { now: 0 });
    expect(lateSpy).toHaveBeenCalledTimes(1);
  });

  it('a consumeOne that throws or rejects is a store failure, not a crash', async () => {
    class Failing extends MemoryStore {
      override consumeOne(): never {
        throw new Error('down');
      }
    }
    const limiter = new Limiter({ algorithm, store: new Failing() });
    await expect(limiter.check('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
  });
});

describe('Limiter: the combined decision of layered limits', () => {
  const limiter = new Limiter({
    limits: [
      { name: 'second', algorithm: fixedWindow({ limit: 3, window: 1000 }) },
      { name: 'minute', algorithm: fixedWindow({ limit: 2, window: 60_000 }) },
    ],
  });

  it('when allowed, reports the limit with the fewest units left', () => {
    expect(limiter.check('c', { now: 0 })).toMatchObject({ allowed: true, policy: 'minute', remaining: 1 });
  });

  it('when refused, reports the refused limit the caller must wait longest for; -1 outranks any wait', () => {
    limiter.check('c', { now: 0 });
    expect(limiter.check('c', { now: 0 })).toMatchObject({
      allowed: false,
      policy: 'minute',
      retryAfter: 60_000,
    });
    expect(limiter.check('c', { now: 0, cost: 3 })).toMatchObject({
      allowed: false,
      policy: 'minute',
      retryAfter: -1,
      reason: 'cost-exceeds-limit',
    });
  });
});

describe("Limiter: check's direct path (one limit, a string key)", () => {
  // The direct path builds its combined decision itself (combineOne); the batch path (an array of
  // keys) goes through combine(). Both must answer the same decision, field for field, in order.
  const algorithms = {
    'token bucket': () => tokenBucket({ capacity: 3, refillInterval: '3s' }),
    'fixed window': () => fixedWindow({ limit: 2, window: 1000 }),
    'leaky bucket queue (delays)': () => leakyBucketQueue({ rate: 2, period: '1s', queue: 2 }),
    'sliding window counter': () => slidingWindowCounter({ limit: 3, window: 1000, precision: 2 }),
    'sliding window log': () => slidingWindowLog({ limit: 2, window: 1000 }),
  };
  for (const [name, make] of Object.entries(algorithms)) {
    it(`${name}: answers as the batch path, admitted, delayed, refused and never`, () => {
      const direct = new Limiter({ algorithm: make() });
      const batch = new Limiter({ algorithm: make() });
      const seen = new Set<string>();
      for (const [now, cost] of [
        [0, 1],
        [0, 1],
        [0, 1],
        [0, 1],
        [0, 9],
        [400, 1],
        [1200, 2],
        [1200, 1],
      ] as const) {
        const a = direct.check('k', { now, cost }) as Decision;
        const b = batch.check(['k'], { now, cost }) as Decision;
        expect(a).toStrictEqual(b);
        expect(Object.keys(a)).toEqual(Object.keys(b));
        expect(a.limits).toHaveLength(1);
        expect(a.limits[0]!.limits).toEqual([]);
        seen.add(a.allowed ? (a.delay > 0 ? 'delayed' : 'admitted') : (a.reason ?? ''));
      }
      expect(seen).toContain('admitted');
      expect(seen).toContain('rate-limited');
      expect(seen).toContain('cost-exceeds-limit');
    });
  }
});
