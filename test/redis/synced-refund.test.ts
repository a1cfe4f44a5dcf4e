import type { LimitCall } from '@sluice/core';
import {
  type Algorithm,
  fixedWindow,
  gcra,
  Limiter,
  MemoryStore,
  type Store,
  slidingWindowCounter,
  tokenBucket,
} from '@sluice/core';
import { RedisStore, SyncedStore } from '@sluice/redis';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from './client-family.js';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';

// SyncedStore's refund and charge (count: 'failed', settle, plan changes), against MemoryStore:
// one node decides exactly as a memory store does whatever it consumes, charges and gives back
// between syncs, and what reaches Redis is the memory store's state (read by a RedisStore on the
// same prefix). Without them `count: 'failed'` on a SyncedStore counted every request.
const START = 1_700_000_000_000;
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

const ALGORITHMS: readonly [string, Algorithm][] = [
  ['token bucket', tokenBucket({ capacity: 8, refillAmount: 2, refillInterval: 70_000 })],
  ['gcra', gcra({ rate: 3, period: 100_000, burst: 5 })],
  ['fixed window', fixedWindow({ limit: 7, window: 120_000 })],
  ['sliding window counter', slidingWindowCounter({ limit: 9, window: 120_000, precision: 4 })],
];

type Op = 'consume' | 'charge' | 'refund' | 'sync';
type Step = { op: Op; key: number; cost: number; gap: number };
const step = fc.record({
  op: fc.constantFrom<Op>('consume', 'consume', 'charge', 'refund', 'refund', 'sync'),
  key: fc.integer({ min: 0, max: 1 }),
  cost: fc.integer({ min: 1, max: 9 }),
  gap: fc.integer({ min: 0, max: 40_000 }),
}) as fc.Arbitrary<Step>;

/** Each step's answer: decisions for consume, units taken for charge, what is left after a refund. */
async function replay(
  store: Store,
  algorithm: Algorithm,
  steps: readonly Step[],
  sync: () => Promise<void>,
): Promise<{ answers: unknown[]; end: number }> {
  let now = START;
  const answers: unknown[] = [];
  const left = async (call: LimitCall) => (await store.peek([{ ...call, cost: 1 }], now))[0]!.remaining;
  for (const { op, key, cost, gap } of steps) {
    now += gap;
    const call: LimitCall = { algorithm, key: `k${key}`, cost, policy: 'p' };
    if (op === 'sync') await sync();
    else if (op === 'consume') {
      const [d] = await store.consume([call], now);
      answers.push([d!.allowed, d!.remaining]);
    } else if (op === 'charge') {
      answers.push(['charge', (await store.charge!([call], now))[0], await left(call)]);
    } else {
      await store.refund!([call], now);
      answers.push(['refund', await left(call)]);
    }
  }
  return { answers, end: now };
}

const subjects: readonly [string, Redis | Cluster][] = [
  ['Redis', standalone],
  ['Redis Cluster', cluster],
];

describe.each(subjects)('SyncedStore refund and charge on %s, against MemoryStore', (_name, client) => {
  it.each(ALGORITHMS)(
    '%s: the same answers on random traces, and the same state in Redis after a sync',
    async (_kind, algorithm) => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
          const prefix = uniquePrefix('synced-refund');
          const node = new SyncedStore({ client, prefix, interval: 0, timeout: 5_000, breaker: false });
          const memory = new MemoryStore();
          const synced = await replay(node, algorithm, steps, () => node.sync());
          const expected = await replay(memory, algorithm, steps, async () => {});
          expect(synced.answers).toEqual(expected.answers);
          await node.sync();
          // What the fleet holds: a RedisStore on the same prefix reads the states the sync wrote.
          const redis = new RedisStore({ client, prefix, timeout: 5_000, breaker: false });
          for (const key of ['k0', 'k1']) {
            const call = { algorithm, key, cost: 1, policy: 'p' };
            const [fleet] = await redis.peek([call], synced.end);
            const [mine] = memory.peek([call], synced.end);
            expect([key, fleet!.remaining, fleet!.retryAfter]).toEqual([
              key,
              mine!.remaining,
              mine!.retryAfter,
            ]);
          }
          await node.shutdown();
        }),
        { numRuns: 20 },
      );
    },
  );

  it("two nodes: one node's refund comes off the fleet's count, never below zero, and the other sees it", async () => {
    const algorithm = fixedWindow({ limit: 10, window: '1m' });
    const prefix = uniquePrefix('synced-refund');
    const [a, b] = [0, 1].map(
      () => new SyncedStore({ client, prefix, interval: 0, timeout: 5_000, breaker: false }),
    ) as [SyncedStore, SyncedStore];
    const call: LimitCall = { algorithm, key: 'user', cost: 3, policy: 'p' };
    const now = START - (START % 60_000);
    a.consume([call], now);
    b.consume([call], now);
    await a.sync();
    await b.sync();
    // a gives back 2 of its 3; b then sees 3 + 3 − 2 = 4 consumed, 6 left.
    a.refund([{ ...call, cost: 2 }], now);
    await a.sync();
    await b.sync();
    expect(b.peek([{ ...call, cost: 1 }], now)[0]!.remaining).toBe(6);
    // More than a holds in its view (4) comes back as 4, not 9: the fleet's count stops at 0.
    a.refund([{ ...call, cost: 9 }], now);
    await a.sync();
    await b.sync();
    expect(b.peek([{ ...call, cost: 1 }], now)[0]!.remaining).toBe(10);
    await Promise.all([a.shutdown(), b.shutdown()]);
  });

  it("count: 'failed' through a Limiter's store: an admission given back is admitted again", async () => {
    const algorithm = fixedWindow({ limit: 2, window: '1m' });
    const store = new SyncedStore({
      client,
      prefix: uniquePrefix('synced-refund'),
      interval: 0,
      breaker: false,
    });
    const limiter = new Limiter({ algorithm, store });
    const now = START - (START % 60_000);
    for (let i = 0; i < 5; i++) {
      expect((await limiter.check('login', { now })).allowed).toBe(true);
      await store.refund(
        [{ algorithm: limiter.limits[0]!.algorithm, key: 'login', cost: 1, policy: 'fixed-window' }],
        now,
      );
    }
    await store.shutdown();
  });
});
