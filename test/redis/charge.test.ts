import type { LimitCall } from '@sluice/core';
import {
  type Algorithm,
  fixedWindow,
  gcra,
  leakyBucketQueue,
  MemoryStore,
  type Store,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';

// Store.charge (settle upwards, plan changes) on Redis against its TypeScript twin (`chargeStep`
// in MemoryStore): random traces of consume, charge and refund give the same decisions and the
// same units taken on every store, and a charge never drives a limit below zero.
const START = 1_700_000_000_000;
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

const ALGORITHMS: readonly [string, Algorithm][] = [
  ['token bucket', tokenBucket({ capacity: 8, refillAmount: 2, refillInterval: 70_000 })],
  [
    'token bucket, stepped',
    tokenBucket({ capacity: 6, refillAmount: 2, refillInterval: 60_000, refill: 'stepped' }),
  ],
  ['gcra', gcra({ rate: 3, period: 100_000, burst: 5 })],
  ['fixed window', fixedWindow({ limit: 7, window: 120_000 })],
  ['sliding window log', slidingWindowLog({ limit: 6, window: 150_000 })],
  ['sliding window counter', slidingWindowCounter({ limit: 9, window: 120_000 })],
  ['leaky bucket queue', leakyBucketQueue({ rate: 2, period: 60_000, burst: 2, queue: 3 })],
];

type Step = { op: 'consume' | 'charge' | 'refund'; key: number; cost: number; gap: number };
const step = fc.record({
  op: fc.constantFrom('consume', 'charge', 'charge', 'refund'),
  key: fc.integer({ min: 0, max: 1 }),
  cost: fc.integer({ min: 1, max: 12 }),
  gap: fc.integer({ min: 0, max: 40_000 }),
}) as fc.Arbitrary<Step>;

/** What each step answered: decisions for consume, units taken for charge, nothing for refund. */
async function replay(store: Store, algorithm: Algorithm, steps: readonly Step[]): Promise<unknown[]> {
  let now = START;
  const out: unknown[] = [];
  for (const { op, key, cost, gap } of steps) {
    now += gap;
    const call: LimitCall = { algorithm, key: `k${key}`, cost, policy: 'p' };
    if (op === 'consume') {
      const [d] = await store.consume([call], now);
      out.push([d!.allowed, d!.remaining]);
    } else if (op === 'charge') {
      const before = (await store.peek([{ ...call, cost: 1 }], now))[0]!.remaining;
      const [taken] = await store.charge!([call], now);
      const after = (await store.peek([{ ...call, cost: 1 }], now))[0]!.remaining;
      // Never more than asked, never more than was left, and what was taken is gone.
      expect(taken).toBeLessThanOrEqual(Math.min(cost, before));
      expect(after).toBeGreaterThanOrEqual(0);
      out.push(['charge', taken, after]);
    } else {
      await store.refund!([call], now);
      out.push(['refund', (await store.peek([{ ...call, cost: 1 }], now))[0]!.remaining]);
    }
  }
  return out;
}

describe.each([
  ['Redis', standalone],
  ['Redis Cluster', cluster],
] as const)('Store.charge on %s, against MemoryStore', (_name, client) => {
  it.each(ALGORITHMS)('%s: the same answers on random traces, never below zero', async (_kind, algorithm) => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const memory = new MemoryStore();
        const redis = new RedisStore({
          client,
          prefix: uniquePrefix('charge'),
          timeout: 5_000,
          breaker: false,
        });
        expect(await replay(redis, algorithm, steps)).toEqual(await replay(memory, algorithm, steps));
      }),
      { numRuns: 25 },
    );
  });

  it('a charge takes what is left, exactly: 3 of 10 left, 5 asked, 3 taken, then none', async () => {
    const algorithm = fixedWindow({ limit: 10, window: '1m' });
    const redis = new RedisStore({ client, prefix: uniquePrefix('charge'), timeout: 5_000, breaker: false });
    const call: LimitCall = { algorithm, key: 'user:1', cost: 7, policy: 'p' };
    await redis.consume([call], START);
    expect(await redis.charge([{ ...call, cost: 5 }], START)).toEqual([3]);
    expect(await redis.charge([{ ...call, cost: 5 }], START)).toEqual([0]);
    const [d] = await redis.peek([{ ...call, cost: 1 }], START);
    expect([d!.allowed, d!.remaining]).toEqual([false, 0]);
  });
});
