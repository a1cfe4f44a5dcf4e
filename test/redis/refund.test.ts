import type { LimitCall } from '@sluice/core';
import {
  type Algorithm,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  type Store,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent, type RedisStoreOptions } from '@sluice/redis';
import fc from 'fast-check';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import type { Cluster, Redis } from './client-family.js';
import { connectCluster, connectRedis, storeClient, uniquePrefix } from './clients.js';

const START = 1_700_000_000_000;
const SCALE = 1000;
const errors: RedisStoreErrorEvent[] = [];
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

/** `RedisStore`'s default `replayGrace`, ms. */
const DEFAULT_REPLAY_GRACE = 600_000;

function redisStore(client: Redis | Cluster, options: Partial<RedisStoreOptions> = {}): RedisStore {
  return new RedisStore({
    client: storeClient(client),
    prefix: uniquePrefix('refund'),
    timeout: 5_000,
    failurePolicy: 'deny',
    breaker: false,
    onError: (event) => errors.push(event),
    ...options,
  });
}

/** Trace time: drawn gaps plus SCALE × real time, so Redis expiry never runs ahead of it. */
function traceClock(): (gap: number) => number {
  const real = performance.now();
  let gaps = 0;
  return (gap) => {
    gaps += gap;
    return START + gaps + Math.ceil(SCALE * (performance.now() - real));
  };
}

const queue = leakyBucketQueue({ rate: 1, period: 60_000, burst: 1, queue: 3 });
const bucket = tokenBucket({ capacity: 5, refillInterval: 60_000 });
const calls = (key: string, cost = 1, algorithm: Algorithm = queue): LimitCall[] => [
  { algorithm, key, cost, policy: 'queue' },
];

/** Every built-in algorithm has a refund, and so every Lua twin. */
const REFUNDABLE: readonly [string, Algorithm][] = [
  ['leaky bucket queue', queue],
  ['token bucket, continuous', tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 70_000 })],
  ['token bucket, stepped', tokenBucket({ capacity: 4, refillInterval: 60_000, refill: 'stepped' })],
  ['gcra', gcra({ rate: 3, period: 100_000, burst: 4 })],
  ['fixed window', fixedWindow({ limit: 4, window: 120_000 })],
  ['sliding window log', slidingWindowLog({ limit: 5, window: 150_000 })],
  ['sliding window counter, precision 3', slidingWindowCounter({ limit: 6, window: 90_000, precision: 3 })],
];

const subjects: readonly [string, Redis | Cluster][] = [
  ['standalone', standalone],
  ['cluster', cluster],
];

describe.each(subjects)('RedisStore.refund (%s)', (_name, client) => {
  it('a refunded held request gives its queue slot back to the next arrival', async () => {
    const store = redisStore(client);
    const limiter = new Limiter({ algorithm: queue, store });
    const delays = [];
    for (let i = 0; i < 4; i++) delays.push((await limiter.check('k', { now: START })).delay);
    expect(delays).toEqual([0, 60_000, 120_000, 180_000]);
    expect((await limiter.check('k', { now: START })).allowed).toBe(false);
    // The last one's client went away while held: its slot leaves the queue.
    await store.refund(calls('k'), START + 10);
    const key = store.keyFor(queue, 'k');
    expect(Number(await client.hget(key, store.fieldFor(queue)))).toBe(START + 180_000);
    // The refund passed its own now (a replay): the hash outlives the state by the replay grace. Its
    // life never shortens (another limit's field may need it): it keeps the 240 s the queue needed
    // before the refund.
    const pttl = await client.pttl(key);
    expect(pttl).toBeGreaterThan(179_000 + DEFAULT_REPLAY_GRACE);
    expect(pttl).toBeLessThanOrEqual(240_000 + DEFAULT_REPLAY_GRACE);
    expect(await limiter.check('k', { now: START + 10 })).toMatchObject({ allowed: true, delay: 179_990 });
    expect(errors).toEqual([]);
  });

  it('refunding everything deletes the key; unknown keys are left alone', async () => {
    const store = redisStore(client);
    const limiter = new Limiter({
      limits: [
        { name: 'queue', algorithm: queue },
        { name: 'bucket', algorithm: bucket },
      ],
      store,
    });
    await limiter.check(['q{1}', 'b{2}'], { now: START, cost: 2 });
    await store.refund(
      [
        { algorithm: queue, key: 'q{1}', cost: 2, policy: 'queue' },
        { algorithm: bucket, key: 'b{2}', cost: 2, policy: 'bucket' },
        { algorithm: queue, key: 'never-used', cost: 1, policy: 'queue' },
      ],
      START + 1,
    );
    expect(await client.hexists(store.keyFor(queue, 'q{1}'), store.fieldFor(queue))).toBe(0);
    expect(await client.hexists(store.keyFor(queue, 'never-used'), store.fieldFor(queue))).toBe(0);
    const peeked = await store.peek(
      [
        { algorithm: queue, key: 'q{1}', cost: 1, policy: 'queue' },
        { algorithm: bucket, key: 'b{2}', cost: 1, policy: 'bucket' },
      ],
      START + 1,
    );
    // The bucket's two tokens went back too: it is full again, and its key is gone.
    expect(await client.hexists(store.keyFor(bucket, 'b{2}'), store.fieldFor(bucket))).toBe(0);
    expect(peeked).toMatchObject([
      { policy: 'queue', remaining: 4 },
      { policy: 'bucket', remaining: 5 },
    ]);
  });

  it.each(REFUNDABLE)(
    'random consume / refund traces give the memory store’s decisions: %s',
    async (_label, algorithm) => {
      const step = fc.record({
        refund: fc.constantFrom('none', 'after', 'before'),
        key: fc.constantFrom('a', '{b}', 'c'),
        cost: fc.integer({ min: 1, max: 3 }),
        gap: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 30_000 }),
          fc.integer({ min: 0, max: 200_000 }),
        ),
      });
      let refunds = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 50 }), async (trace) => {
          const memory = new MemoryStore();
          const redis = redisStore(client);
          const clock = traceClock();
          for (const { refund, key, cost, gap } of trace) {
            const now = clock(gap);
            const call = calls(key, cost, algorithm);
            // A refund right after the consume it undoes, at the same instant (what a refund is
            // for), or before a consume, on whatever state the key holds (a compensation must agree
            // there too).
            if (refund === 'before') {
              memory.refund(call, now);
              await redis.refund(call, now);
              refunds++;
            }
            const consumed = memory.consume(call, now);
            expect(await redis.consume(call, now)).toEqual(consumed);
            if (refund === 'after') {
              memory.refund(call, now);
              await redis.refund(call, now);
              refunds++;
            }
            const later = clock(0);
            expect(await redis.peek(call, later)).toEqual(memory.peek(call, later));
          }
        }),
        { numRuns: 25 },
      );
      expect(refunds).toBeGreaterThan(80);
      expect(errors).toEqual([]);
    },
  );

  it('sliding window log: requests in the same millisecond share one entry, and a refund takes its units out of it', async () => {
    const log = slidingWindowLog({ limit: 10, window: 60_000 });
    const store = redisStore(client);
    const memory = new MemoryStore();
    const key = store.keyFor(log, 'k');
    for (const [now, cost] of [
      [START, 2],
      [START, 3],
      [START + 0.5, 1],
      [START + 0.5, 1],
    ] as const) {
      expect(await store.consume(calls('k', cost, log), now)).toEqual(
        memory.consume(calls('k', cost, log), now),
      );
    }
    expect(memory.inspect(log, 'k')).toEqual([START, 5, START + 0.5, 2]);
    expect(await client.hget(key, store.fieldFor(log))).toBe(`${START},5,${START + 0.5},2`);
    await store.refund(calls('k', 3, log), START);
    memory.refund(calls('k', 3, log), START);
    expect(await client.hget(key, store.fieldFor(log))).toBe(`${START},2,${START + 0.5},2`);
    expect(memory.inspect(log, 'k')).toEqual([START, 2, START + 0.5, 2]);
  });

  it('a refund forgets the local refusal of the key (deny cache)', async () => {
    const store = redisStore(client, { denyCache: 100 });
    const limiter = new Limiter({ algorithm: queue, store });
    for (let i = 0; i < 4; i++) await limiter.check('k', { now: START });
    expect(await limiter.check('k', { now: START })).toMatchObject({
      allowed: false,
      reason: 'rate-limited',
    });
    await store.refund(calls('k'), START);
    expect(await limiter.check('k', { now: START })).toMatchObject({ allowed: true, delay: 180_000 });
  });
});

describe('RedisStore.refund when Redis is unavailable', () => {
  let server: RedisProcess;
  let client: Redis;
  let failures: RedisStoreErrorEvent[];

  beforeEach(async () => {
    server = await startRedis();
    client = await connectRedis(server.port);
    failures = [];
  });
  afterEach(async () => {
    client.disconnect();
    await server.stop();
  });

  const store = (failurePolicy: NonNullable<RedisStoreOptions['failurePolicy']>) =>
    new RedisStore({
      client: storeClient(client),
      timeout: 100,
      failurePolicy,
      onError: (event) => failures.push(event),
    });

  it('resolves, reports the failure, and refunds the fallback store that took the request', async () => {
    const fallback = new MemoryStore();
    const redis = store(fallback);
    await server.kill();
    const limiter = new Limiter({ algorithm: queue, store: redis });
    for (let i = 0; i < 3; i++) await limiter.check('k', { now: START });
    expect(fallback.inspect(queue, 'k')).toBe(START + 180_000);
    await expect(redis.refund(calls('k'), START)).resolves.toBeUndefined();
    expect(fallback.inspect(queue, 'k')).toBe(START + 120_000);
    expect(failures.map((f) => f.operation)).toEqual(['consume', 'consume', 'consume', 'refund']);
  });

  it("'allow': resolves and reports; a throwing fallback refund is reported too", async () => {
    // Both stores are made while the client is ready: a store made on a client that is not ready
    // yet waits for it first (start-up, see readyTimeout), which is not what this test is about.
    const allowing = store('allow');
    const broken: Store = {
      consume: () => [],
      peek: () => [],
      reset: () => undefined,
      shutdown: () => undefined,
      refund: () => {
        throw new Error('fallback bug');
      },
    };
    const fallingBack = store(broken);
    await server.kill();
    await expect(allowing.refund(calls('k'), START)).resolves.toBeUndefined();
    await expect(fallingBack.refund(calls('k'), START)).resolves.toBeUndefined();
    expect(failures.map((f) => f.operation)).toEqual(['refund', 'refund', 'fallback']);
  });
});
