import {
  type LimitCall,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  type Store,
  tokenBucket,
} from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent, type RedisStoreOptions } from '@sluice/redis';
import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';

const START = 1_700_000_000_000;
const SCALE = 1000;
const errors: RedisStoreErrorEvent[] = [];
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

function redisStore(client: Redis | Cluster, options: Partial<RedisStoreOptions> = {}): RedisStore {
  return new RedisStore({
    client,
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
const calls = (key: string, cost = 1): LimitCall[] => [{ algorithm: queue, key, cost, policy: 'queue' }];

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
    expect(Number(await client.get(key))).toBe(START + 180_000);
    const pttl = await client.pttl(key);
    expect(pttl).toBeGreaterThan(179_000);
    expect(pttl).toBeLessThanOrEqual(180_000);
    expect(await limiter.check('k', { now: START + 10 })).toMatchObject({ allowed: true, delay: 179_990 });
    expect(errors).toEqual([]);
  });

  it('refunding everything deletes the key; unknown keys and algorithms without refund are left alone', async () => {
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
    expect(await client.exists(store.keyFor(queue, 'q{1}'))).toBe(0);
    expect(await client.exists(store.keyFor(queue, 'never-used'))).toBe(0);
    const peeked = await store.peek(
      [
        { algorithm: queue, key: 'q{1}', cost: 1, policy: 'queue' },
        { algorithm: bucket, key: 'b{2}', cost: 1, policy: 'bucket' },
      ],
      START + 1,
    );
    expect(peeked).toMatchObject([
      { policy: 'queue', remaining: 4 },
      { policy: 'bucket', remaining: 3 },
    ]);
  });

  it('random consume / refund traces give the memory store’s decisions', async () => {
    const step = fc.record({
      refund: fc.boolean(),
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
          if (refund) {
            memory.refund(calls(key, cost), now);
            await redis.refund(calls(key, cost), now);
            refunds++;
          }
          expect(await redis.consume(calls(key, cost), now)).toEqual(memory.consume(calls(key, cost), now));
        }
      }),
      { numRuns: 30 },
    );
    expect(refunds).toBeGreaterThan(100);
    expect(errors).toEqual([]);
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
    new RedisStore({ client, timeout: 100, failurePolicy, onError: (event) => failures.push(event) });

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
    await server.kill();
    await expect(store('allow').refund(calls('k'), START)).resolves.toBeUndefined();
    const broken: Store = {
      consume: () => [],
      peek: () => [],
      reset: () => undefined,
      shutdown: () => undefined,
      refund: () => {
        throw new Error('fallback bug');
      },
    };
    await expect(store(broken).refund(calls('k'), START)).resolves.toBeUndefined();
    expect(failures.map((f) => f.operation)).toEqual(['refund', 'refund', 'fallback']);
  });
});
