import { setTimeout as sleep } from 'node:timers/promises';
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
import { connectCluster, connectRedis, storeClient, uniquePrefix } from './clients.js';

// These traces run on their own clock, SCALE times faster than real time plus the drawn gaps, with
// limits minutes long: each step moves the trace on. Replays at other speeds (frozen, slower than
// real time) are below, with limits in ms.
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
    } else if ((await client.hexists(redis.keyFor(algorithm, key), redis.fieldFor(algorithm))) === 1)
      return false;
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
    client: storeClient(client),
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
          const expected = peek ? memory.peekSync(key, { cost, now }) : memory.checkSync(key, { cost, now });
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
            // The algorithms as the stores see them: each limit's name bound in.
            const pairs = memory.limits.map((limit, i) => [limit.algorithm, keys[i]] as const);
            const onTime = late === 0 || !(await canArriveLate(memoryStore, store, client, pairs, newest));
            // Late by up to 3 × the longest window of the limits.
            const now = onTime ? newest : newest - late * longest;
            if (!onTime) lateSteps++;
            const expected = peek
              ? memory.peekSync(keys, { cost, now })
              : memory.checkSync(keys, { cost, now });
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

/**
 * Limits in ms, so that the wall time a trace takes (Redis round trips) is many of their windows:
 * Redis keys live in wall time while the states run on the trace's `now`.
 */
const SHORT: readonly [string, Algorithm][] = [
  ['gcra', gcra({ rate: 1000, period: '1s', burst: 5 })],
  ['token bucket, continuous', tokenBucket({ capacity: 5, refillInterval: 4 })],
  [
    'token bucket, stepped',
    tokenBucket({ capacity: 4, refillAmount: 2, refillInterval: 10, refill: 'stepped' }),
  ],
  ['fixed window', fixedWindow({ limit: 5, window: 20 })],
  ['sliding window log', slidingWindowLog({ limit: 5, window: 20 })],
  ['sliding window counter, precision 4', slidingWindowCounter({ limit: 6, window: 20, precision: 4 })],
  ['leaky bucket queue', leakyBucketQueue({ rate: 200, period: '1s', burst: 2, queue: 3 })],
];

const SHORT_LAYERED: { name: string; algorithm: Algorithm }[] = [
  { name: 'meter', algorithm: gcra({ rate: 500, period: '1s', burst: 4 }) },
  { name: 'window', algorithm: fixedWindow({ limit: 6, window: 30 }) },
  { name: 'log', algorithm: slidingWindowLog({ limit: 5, window: 25 }) },
];

/**
 * How fast a replayed trace's `now` runs against wall time: frozen (one `now` for the whole
 * trace), slower than real time, real time, faster.
 */
const SPEEDS: readonly [string, number][] = [
  ['frozen', 0],
  ['slower than real time (0.1×)', 0.1],
  ['real time', 1],
  ['faster than real time (10×)', 10],
];

/** A historical `now` running at `speed` × wall time from the trace's start. */
function replayClock(speed: number): () => number {
  const start = 1_600_000_000_000;
  const wall = performance.now();
  return () => start + speed * (performance.now() - wall);
}

describe.each(subjects)(
  'replayed traces at any speed give the memory store’s decisions (%s)',
  (_name, client) => {
    it('a replayed now: gcra 1000/s burst 5, 20 checks at one historical now, 3 ms apart, admits 5', async () => {
      const algorithm = gcra({ rate: 1000, period: '1s', burst: 5 });
      const memory = new Limiter({ algorithm, store: new MemoryStore() });
      const redis = new Limiter({ algorithm, store: redisStore(client) });
      const now = 1_600_000_000_000;
      const admitted = { memory: 0, redis: 0 };
      for (let i = 0; i < 20; i++) {
        if ((await redis.check('k', { now })).allowed) admitted.redis++;
        if ((await memory.check('k', { now })).allowed) admitted.memory++;
        // Wall time passes between the checks (the replay is slower than real time), well past the
        // 5 ms the state lives in the trace's time.
        await sleep(3);
      }
      expect(admitted).toEqual({ memory: 5, redis: 5 });
    });

    it.each(SPEEDS)('%s: each algorithm', async (_label, speed) => {
      let steps = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...SHORT),
          fc.array(
            fc.record({
              key: fc.constantFrom('a', 'b', '{c}'),
              cost: fc.integer({ min: 1, max: 3 }),
              peek: fc.boolean().map((b) => b && Math.random() < 0.2),
            }),
            { minLength: 10, maxLength: 40 },
          ),
          async ([, algorithm], calls) => {
            const memory = new Limiter({ algorithm, store: new MemoryStore() });
            const redis = new Limiter({ algorithm, store: redisStore(client) });
            const clock = replayClock(speed);
            for (const { key, cost, peek } of calls) {
              const now = clock();
              const expected = peek
                ? memory.peekSync(key, { cost, now })
                : memory.checkSync(key, { cost, now });
              const actual = await (peek ? redis.peek(key, { cost, now }) : redis.check(key, { cost, now }));
              expect(actual).toEqual(expected);
              steps++;
            }
          },
        ),
        { numRuns: 40 },
      );
      expect(errors).toEqual([]);
      expect(steps).toBeGreaterThanOrEqual(400);
    });

    it.each(SPEEDS)('%s: layered limits with per-limit keys', async (_label, speed) => {
      let steps = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              keys: fc.array(fc.constantFrom('a', 'b', 'c{x}', undefined), {
                minLength: SHORT_LAYERED.length,
                maxLength: SHORT_LAYERED.length,
              }),
              cost: fc.integer({ min: 1, max: 3 }),
              peek: fc.boolean().map((b) => b && Math.random() < 0.2),
            }),
            { minLength: 10, maxLength: 40 },
          ),
          async (calls) => {
            const memory = new Limiter({ limits: SHORT_LAYERED, store: new MemoryStore() });
            const redis = new Limiter({ limits: SHORT_LAYERED, store: redisStore(client) });
            const clock = replayClock(speed);
            for (const { keys, cost, peek } of calls) {
              const now = clock();
              const expected = peek
                ? memory.peekSync(keys, { cost, now })
                : memory.checkSync(keys, { cost, now });
              const actual = await (peek
                ? redis.peek(keys, { cost, now })
                : redis.check(keys, { cost, now }));
              expect(actual).toEqual(expected);
              steps++;
            }
          },
        ),
        { numRuns: 15 },
      );
      expect(errors).toEqual([]);
      expect(steps).toBeGreaterThanOrEqual(150);
    });
  },
);
