import { fixedWindow, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
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
