import {
  type Algorithm,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from './client-family.js';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';

// Redis expires keys in real time while these traces run on their own clock. So that a key Redis
// has expired is always one the memory store also sees as fresh, the trace's clock runs at least
// SCALE times faster than real time (plus the drawn gaps), and the limits are minutes long.
const SCALE = 1000;

const ALGORITHMS: readonly [string, Algorithm][] = [
  ['token bucket, continuous', tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 70_000 })],
  ['token bucket, continuous, strict', tokenBucket({ capacity: 4, refillInterval: 90_000, strict: true })],
  [
    'token bucket, stepped',
    tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 60_000, refill: 'stepped' }),
  ],
  [
    'token bucket, stepped, strict',
    tokenBucket({ capacity: 3, refillInterval: 45_000, refill: 'stepped', strict: true }),
  ],
  ['gcra', gcra({ rate: 3, period: 100_000, burst: 4 })],
  ['fixed window', fixedWindow({ limit: 4, window: 120_000 })],
  ['sliding window log', slidingWindowLog({ limit: 5, window: 150_000 })],
  ['sliding window counter', slidingWindowCounter({ limit: 6, window: 120_000 })],
  ['sliding window counter, precision 4', slidingWindowCounter({ limit: 7, window: 90_000, precision: 4 })],
  ['leaky bucket queue', leakyBucketQueue({ rate: 2, period: 60_000, burst: 2, queue: 3 })],
  ['leaky bucket queue, maxDelay', leakyBucketQueue({ rate: 3, period: 70_000, maxDelay: 50_000 })],
  [
    'leaky bucket queue, maxDelay tighter than queue',
    leakyBucketQueue({ rate: 1, period: 60_000, burst: 2, queue: 10, maxDelay: 90_000 }),
  ],
];

/**
 * Layered limits: a mix of kinds (the batch script), and kinds that all have a lean twin (one lean
 * batch script per set of limits when their keys share a slot; the batch script across slots).
 */
const LAYERED: readonly [string, { name: string; algorithm: Algorithm }[]][] = [
  [
    'mixed kinds',
    [
      { name: 'burst', algorithm: tokenBucket({ capacity: 4, refillInterval: 80_000, strict: true }) },
      { name: 'hourly', algorithm: slidingWindowLog({ limit: 6, window: 200_000 }) },
      { name: 'window', algorithm: fixedWindow({ limit: 5, window: 150_000 }) },
      { name: 'meter', algorithm: gcra({ rate: 2, period: 50_000, burst: 3 }) },
    ],
  ],
  [
    'lean kinds',
    [
      { name: 'burst', algorithm: tokenBucket({ capacity: 4, refillInterval: 80_000, strict: true }) },
      {
        name: 'stepped',
        algorithm: tokenBucket({ capacity: 6, refillAmount: 2, refillInterval: 60_000, refill: 'stepped' }),
      },
      { name: 'window', algorithm: fixedWindow({ limit: 5, window: 150_000 }) },
      { name: 'meter', algorithm: gcra({ rate: 2, period: 50_000, burst: 3 }) },
      { name: 'queue', algorithm: leakyBucketQueue({ rate: 3, period: 70_000, burst: 2, queue: 3 }) },
    ],
  ],
];

/**
 * Out-of-order (replayed, client-supplied) timestamps: most steps are on time (0); some arrive
 * late by up to 3 windows of the limit, given as a fraction of its window (0.5 = half a window).
 */
const lateness = fc.oneof(
  { weight: 4, arbitrary: fc.constant(0) },
  { weight: 1, arbitrary: fc.double({ min: 0, max: 3, noNaN: true }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }) },
);

const step = fc.record({
  key: fc.constantFrom('a', 'b', '{c}'),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 8 })),
  gap: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 0, max: 5_000 }),
    fc.integer({ min: 0, max: 200_000 }),
    fc.double({ min: 0, max: 100_000, noNaN: true }),
  ),
  peek: fc.boolean().map((b) => b && Math.random() < 0.3),
  late: lateness,
});
const trace = fc.array(step, { minLength: 10, maxLength: 60 });

/** One trace's clock: drawn gaps plus SCALE × the real time elapsed, from a fixed start. */
function traceClock(): (gap: number) => number {
  const start = 1_700_000_000_000;
  const real = performance.now();
  let gaps = 0;
  return (gap) => {
    gaps += gap;
    return start + gaps + Math.ceil(SCALE * (performance.now() - real));
  };
}

/**
 * Whether a request stamped before `newest` (the newest time so far) compares the algorithms
 * rather than the stores' forgetting: a state whose ttl has run out by `newest` is as good as
 * fresh from then on, so either store may have dropped it (the memory store when a new key
 * reclaims it, Redis by its PX in real time), but it is not fresh for a request stamped before
 * it ran out. So a step is late only on keys whose state both stores certainly hold (ttl left at
 * `newest`) or neither holds; otherwise it is stamped on time. Out-of-order timestamps are still
 * drawn on most steps that ask for them.
 */
async function canArriveLate(
  memory: MemoryStore,
  redis: RedisStore,
  client: Redis | Cluster,
  pairs: readonly (readonly [Algorithm, string | undefined])[],
  newest: number,
): Promise<boolean> {
  for (const [algorithm, key] of pairs) {
    if (key === undefined) continue;
    const state = memory.inspect(algorithm, key);
    if (state !== undefined) {
      if (algorithm.ttl(state, newest) <= 0) return false;
    } else if ((await client.exists(redis.keyFor(algorithm, key))) === 1) return false;
  }
  return true;
}

const errors: RedisStoreErrorEvent[] = [];
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

function redisStore(client: Redis | Cluster): RedisStore {
  return new RedisStore({
    client,
    prefix: uniquePrefix('diff'),
    timeout: 5_000,
    failurePolicy: 'deny',
    onError: (event) => errors.push(event),
  });
}

const subjects: readonly [string, Redis | Cluster][] = [
  ['standalone', standalone],
  ['cluster', cluster],
];

describe.each(subjects)('Lua twins give the memory store’s decisions (%s)', (_name, client) => {
  it.each(ALGORITHMS)('%s', async (_label, algorithm) => {
    let steps = 0;
    let lateSteps = 0;
    await fc.assert(
      fc.asyncProperty(trace, async (calls) => {
        const memoryStore = new MemoryStore();
        const store = redisStore(client);
        const memory = new Limiter({ algorithm, store: memoryStore });
        const redis = new Limiter({ algorithm, store });
        const clock = traceClock();
        for (const { key, cost, gap, peek, late } of calls) {
          const newest = clock(gap);
          const onTime =
            late === 0 || !(await canArriveLate(memoryStore, store, client, [[algorithm, key]], newest));
          const now = onTime ? newest : newest - late * algorithm.window;
          if (!onTime) lateSteps++;
          const expected = peek ? memory.peek(key, { cost, now }) : memory.check(key, { cost, now });
          const actual = await (peek ? redis.peek(key, { cost, now }) : redis.check(key, { cost, now }));
          expect(actual).toEqual(expected);
          steps++;
        }
      }),
      { numRuns: 30 },
    );
    expect(errors).toEqual([]);
    expect(steps).toBeGreaterThanOrEqual(300);
    expect(lateSteps).toBeGreaterThanOrEqual(30);
  });

  it.each(LAYERED)(
    'layered limits with per-limit keys (different slots on a Cluster): %s',
    async (_label, limits) => {
      const longest = Math.max(...limits.map((limit) => limit.algorithm.window));
      const keyOf = fc.constantFrom('a', 'b', 'c{x}', undefined);
      const layered = fc.array(
        fc.record({
          keys: fc.array(keyOf, { minLength: limits.length, maxLength: limits.length }),
          cost: fc.integer({ min: 1, max: 4 }),
          gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60_000 })),
          peek: fc.boolean().map((b) => b && Math.random() < 0.2),
          late: lateness,
        }),
        { minLength: 10, maxLength: 60 },
      );
      let steps = 0;
      let lateSteps = 0;
      await fc.assert(
        fc.asyncProperty(layered, async (calls) => {
          const memoryStore = new MemoryStore();
          const store = redisStore(client);
          const memory = new Limiter({ limits, store: memoryStore });
          const redis = new Limiter({ limits, store });
          const clock = traceClock();
          for (const { keys, cost, gap, peek, late } of calls) {
            const newest = clock(gap);
            const pairs = limits.map((limit, i) => [limit.algorithm, keys[i]] as const);
            const onTime = late === 0 || !(await canArriveLate(memoryStore, store, client, pairs, newest));
            // Late by up to 3 × the longest window of the limits.
            const now = onTime ? newest : newest - late * longest;
            if (!onTime) lateSteps++;
            const expected = peek ? memory.peek(keys, { cost, now }) : memory.check(keys, { cost, now });
            const actual = await (peek ? redis.peek(keys, { cost, now }) : redis.check(keys, { cost, now }));
            expect(actual).toEqual(expected);
            steps++;
          }
        }),
        { numRuns: 60 },
      );
      expect(errors).toEqual([]);
      expect(steps).toBeGreaterThanOrEqual(600);
      expect(lateSteps).toBeGreaterThanOrEqual(60);
    },
  );
});
