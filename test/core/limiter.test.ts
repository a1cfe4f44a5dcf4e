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
    expect(limiter.checkSync('k', { now: 0 })).toMatchObject({
      allowed: true,
      policy: 'narrow',
      remaining: 1,
    });
    expect(limiter.checkSync('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 0 });
    const refused = limiter.checkSync('k', { now: 0 });
    expect(refused).toMatchObject({
      allowed: false,
      policy: 'narrow',
      retryAfter: 1000,
      reason: 'rate-limited',
    });
    expect(store.inspect(limiter.limits[0]!.algorithm, 'k')).toEqual([2, 0]);
  });

  it('check and peek answer a promise on the memory store too, already fulfilled when returned; checkSync and peekSync the same decisions without one', async () => {
    const algorithm = tokenBucket({ capacity: 2, refillInterval: '1s' });
    const sync = new Limiter({ algorithm });
    const promised = new Limiter({ algorithm });
    for (let i = 0; i < 4; i++) {
      const now = i * 300;
      const answer = promised.check('k', { now });
      expect(answer).toBeInstanceOf(Promise);
      const expected = sync.checkSync('k', { now });
      expect(expected).not.toBeInstanceOf(Promise);
      // Fulfilled when returned: its value is there before any promise made after it.
      const order: string[] = [];
      await Promise.all([
        answer.then(() => order.push('check')),
        Promise.resolve().then(() => order.push('later')),
      ]);
      expect(order).toEqual(['check', 'later']);
      expect(await answer).toEqual(expected);
      const peeked = promised.peek('k', { now });
      expect(peeked).toBeInstanceOf(Promise);
      expect(await peeked).toEqual(sync.peekSync('k', { now }));
    }
  });

  it('bad input throws at the call, before the store, from check as from checkSync', () => {
    const store = new MemoryStore();
    const consume = vi.spyOn(store, 'consumeOne');
    const limiter = new Limiter({ algorithm: tokenBucket({ capacity: 1, refillInterval: '1s' }), store });
    expect(() => limiter.check('k', { cost: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_COST' }),
    );
    expect(() => limiter.checkSync('k', { now: -1 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TIME' }),
    );
    expect(consume).not.toHaveBeenCalled();
  });

  it('checkSync and peekSync refuse a store that is not synchronous, before calling it: nothing is consumed', async () => {
    const inner = new MemoryStore();
    // A store that answers with promises (as Redis does), without Store.synchronous.
    const store = {
      consume: vi.fn(async (...args: Parameters<MemoryStore['consume']>) => inner.consume(...args)),
      peek: vi.fn(async (...args: Parameters<MemoryStore['peek']>) => inner.peek(...args)),
      reset: () => inner.reset([]),
      shutdown: () => inner.shutdown(),
    };
    const limiter = new Limiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store });
    for (const call of [() => limiter.checkSync('k', { now: 0 }), () => limiter.peekSync('k', { now: 0 })])
      expect(call).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_UNSUPPORTED', option: 'store' }));
    expect(store.consume).not.toHaveBeenCalled();
    expect(store.peek).not.toHaveBeenCalled();
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 0 });
    // A store with the direct path (consumeOne) that is not synchronous: refused before it too.
    class NotSynchronous extends MemoryStore {
      override readonly synchronous: boolean = false;
    }
    const direct = new NotSynchronous();
    const one = vi.spyOn(direct, 'consumeOne');
    const single = new Limiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store: direct });
    expect(() => single.checkSync('k', { now: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNSUPPORTED' }),
    );
    expect(one).not.toHaveBeenCalled();
    expect(await single.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('checkSync throws a store failure (ERR_SLUICE_STORE_FAILURE) where check rejects with it', async () => {
    class Failing extends MemoryStore {
      override consumeOne(): never {
        throw new Error('down');
      }
    }
    const limiter = new Limiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store: new Failing() });
    expect(() => limiter.checkSync('k')).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_STORE_FAILURE', message: 'the store failed: down' }),
    );
    await expect(limiter.check('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
  });

  it('a store that answers no decision (no allowed) is a store failure: check rejects, checkSync and peekSync throw', async () => {
    const inner = new MemoryStore();
    const store = {
      synchronous: true,
      consume: (calls: Parameters<MemoryStore['consume']>[0]) => calls.map(() => ({}) as Decision),
      peek: (calls: Parameters<MemoryStore['peek']>[0]) => calls.map(() => ({}) as Decision),
      reset: () => inner.reset([]),
      shutdown: () => inner.shutdown(),
    };
    const limiter = new Limiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store });
    const failure = {
      code: 'ERR_SLUICE_STORE_FAILURE',
      message: 'the store failed: the store answered no decision (no allowed)',
    };
    await expect(limiter.check('k')).rejects.toMatchObject(failure);
    await expect(limiter.peek('k')).rejects.toMatchObject(failure);
    expect(() => limiter.checkSync('k')).toThrow(expect.objectContaining(failure));
    expect(() => limiter.peekSync('k')).toThrow(expect.objectContaining(failure));
  });

  it('a store that says it is synchronous and answers with a promise: checkSync throws a store failure, and the promise is not left unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      class Lying extends MemoryStore {
        override consumeOne(): never {
          return Promise.reject(new Error('late')) as never;
        }
      }
      const limiter = new Limiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store: new Lying() });
      expect(() => limiter.checkSync('k')).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_STORE_FAILURE',
          message: expect.stringContaining(
            'says it is synchronous (Store.synchronous) but answered with a promise',
          ),
        }),
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe("Limiter: the direct path (Store.consumeOne) never bypasses a store's own consume", () => {
  const algorithm = fixedWindow({ limit: 2, window: 1000 });

  it('a single limit on a store with consumeOne takes it, and answers as consume would', () => {
    const store = new MemoryStore();
    const one = vi.spyOn(MemoryStore.prototype, 'consumeOne');
    try {
      const limiter = new Limiter({ algorithm, store });
      expect(limiter.checkSync('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 1 });
      expect(one).toHaveBeenCalledTimes(1);
    } finally {
      one.mockRestore();
    }
    expect(new Limiter({ algorithm, store }).checkSync('k', { now: 0 })).toMatchObject({ remaining: 0 });
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
    limiter.checkSync('k', { now: 0 });
    limiter.checkSync('k', { now: 0 });
    expect(seen).toEqual([1, 1]);
  });

  it('a spy on consume, before or after the limiter is made, sees every call', () => {
    const early = new MemoryStore();
    const earlySpy = vi.spyOn(early, 'consume');
    new Limiter({ algorithm, store: early }).checkSync('k', { now: 0 });
    expect(earlySpy).toHaveBeenCalledTimes(1);
    const late = new MemoryStore();
    const limiter = new Limiter({ algorithm, store: late });
    const lateSpy = vi.spyOn(late, 'consume');
    limiter.checkSync('k', { now: 0 });
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
    expect(limiter.checkSync('c', { now: 0 })).toMatchObject({
      allowed: true,
      policy: 'minute',
      remaining: 1,
    });
  });

  it('when refused, reports the refused limit the caller must wait longest for; -1 outranks any wait', () => {
    limiter.checkSync('c', { now: 0 });
    expect(limiter.checkSync('c', { now: 0 })).toMatchObject({
      allowed: false,
      policy: 'minute',
      retryAfter: 60_000,
    });
    expect(limiter.checkSync('c', { now: 0, cost: 3 })).toMatchObject({
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
        const a = direct.checkSync('k', { now, cost }) as Decision;
        const b = batch.checkSync(['k'], { now, cost }) as Decision;
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
