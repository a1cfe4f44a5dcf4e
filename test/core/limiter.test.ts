import { fixedWindow, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';

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
