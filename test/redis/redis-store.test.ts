import { isDeepStrictEqual } from 'node:util';
import {
  type Algorithm,
  ErrorCode,
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
import { afterAll, describe, expect, inject, it } from 'vitest';
import { escapeKey } from '../../packages/redis/src/key-escape.js';
import { hashSlot } from '../../packages/redis/src/slot.js';
import { startDelayProxy } from '../setup/delay-proxy.js';
import { startRedis } from '../setup/redis-server.js';
import { Cluster, type Redis, storeClient } from './client-family.js';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';
import { countScripts } from './script-counter.js';

// Stores whose answers a test compares with Redis's own take `timeout: 5_000`: on a loaded
// machine a script can take longer than the default 100 ms, and the failure policy's answer would
// then stand in for Redis's (a verdict that depends on the load; CI saw it once).
const client = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  client.disconnect();
  cluster.disconnect();
});

const ALGORITHMS: readonly [string, Algorithm][] = [
  ['token bucket', tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 7_000 })],
  [
    'token bucket, stepped',
    tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 6_000, refill: 'stepped' }),
  ],
  ['gcra', gcra({ rate: 3, period: 10_000, burst: 4 })],
  ['fixed window', fixedWindow({ limit: 4, window: 12_000 })],
  ['sliding window log', slidingWindowLog({ limit: 5, window: 15_000 })],
  ['sliding window counter', slidingWindowCounter({ limit: 6, window: 12_000, precision: 3 })],
  ['leaky bucket queue', leakyBucketQueue({ rate: 2, period: 6_000, burst: 2, queue: 3 })],
];

describe('keys', () => {
  it('escapes braces and backslashes injectively, leaving no } inside the tag', () => {
    const keys = [
      'a',
      '{a}',
      '\\(a',
      '\\{a',
      '{',
      '}',
      '\\',
      '\\\\',
      '(',
      '\\(',
      'x}y{z',
      '',
      '\ud83d',
      '\ud83e',
      '\\ud83d',
      '\ud83d\ude00',
    ];
    const escaped = keys.map(escapeKey);
    expect(new Set(escaped).size).toBe(keys.length);
    for (const e of escaped) {
      expect(e).not.toContain('}');
      // Survives UTF-8 (no lone surrogate left to become U+FFFD).
      expect(Buffer.from(e, 'utf8').toString('utf8')).toBe(e);
    }
  });

  it('lays a user key out as the hash <prefix>{<escaped key>}, a field per limit (its fingerprint)', () => {
    const algorithm = gcra({ rate: 1, period: 1000 });
    const store = new RedisStore({ client, prefix: 'app:' });
    expect(store.keyFor(algorithm, 'user:{42}')).toBe('app:{user:\\(42\\)}');
    expect(store.fieldFor(algorithm)).toBe(algorithm.fingerprint);
  });

  it('computes the slot Redis Cluster computes (CLUSTER KEYSLOT), braces and unicode included', async () => {
    const store = new RedisStore({ client: cluster });
    const algorithm = gcra({ rate: 1, period: 1000 });
    const samples = ['a', 'user:{42}', '}{', '', 'ünï©ødé', 'x'.repeat(300), '{}', 'a{b}c'];
    for (const sample of samples) {
      for (const key of [sample, store.keyFor(algorithm, sample)]) {
        expect(hashSlot(key), key).toBe(await cluster.cluster('KEYSLOT', key));
      }
    }
  });

  it('a brace in a user key does not move it to the slot of another key, nor share its state', async () => {
    const algorithm = fixedWindow({ limit: 1, window: 60_000 });
    const limiter = new Limiter({
      algorithm,
      store: new RedisStore({ client: cluster, prefix: uniquePrefix('brace'), timeout: 5_000 }),
    });
    expect(await limiter.check('{victim}x', { now: 0 })).toMatchObject({ allowed: true });
    expect(await limiter.check('victim', { now: 0 })).toMatchObject({ allowed: true });
    expect(await limiter.check('{victim}y', { now: 0 })).toMatchObject({ allowed: true });
  });
});

describe.each([
  ['standalone', client],
  ['cluster', cluster],
] as [string, Redis | Cluster][])('TTL (%s)', (_name, redis) => {
  // A call at the store's clock is live: the hash lives at least as long as its state. A call with
  // its own `now` is a replay, which may run slower than wall time: it lives replayGrace longer.
  // The hash's life only ever lengthens (PEXPIRE GT: another limit's field may need more), so it is
  // never shorter than the state's ttl and never longer than the longest a write asked for.
  const TIMES = ALGORITHMS.flatMap(([label, algorithm]) => [
    [`${label}, the store's clock`, algorithm, 0] as const,
    [`${label}, a replayed now`, algorithm, 60_000] as const,
  ]);
  it.each(TIMES)(
    '%s: every hash written has PTTL ≥ the algorithm ttl, rounded up, plus the replay grace, and ≤ the longest written',
    async (_label, algorithm, grace) => {
      const prefix = uniquePrefix('ttl');
      let now = 0;
      const replay = grace > 0;
      const store = new RedisStore({
        client: redis,
        prefix,
        timeout: 5_000,
        clock: () => now,
        replayGrace: replay ? grace : '1h',
      });
      const memory = new MemoryStore();
      const redisLimiter = new Limiter({ algorithm, store });
      const memoryLimiter = new Limiter({ algorithm, store: memory });
      const key = 'k';
      const redisKey = store.keyFor(algorithm, key);
      // 1 s into a minute (a multiple of every window here): no write of the trace lands within a
      // few ms of its window's end, where Redis could expire the key in real time before PTTL.
      now = Math.floor(Date.now() / 60_000) * 60_000 + 1_000;
      let writes = 0;
      let longest = 0;
      for (const [gap, cost] of [
        [0, 1],
        [0, 2],
        [1_234.5, 1],
        [0, 3],
        [2_000, 1],
        [0, 9],
        [60_000, 1],
      ] as const) {
        now += gap;
        const previous = memory.inspect(algorithm, key);
        const before = Date.now();
        await redisLimiter.check(key, replay ? { now, cost } : { cost });
        memoryLimiter.checkSync(key, { now, cost });
        const pttl = await redis.pttl(redisKey);
        const elapsed = Date.now() - before;
        const state = memory.inspect(algorithm, key);
        if (state === undefined) {
          expect(pttl).toBe(-2);
          continue;
        }
        // Never without a TTL, written or not.
        expect(pttl).toBeGreaterThan(0);
        // Nothing written (an equal state: `inspect` answers copies): the TTL of the last write runs on.
        if (isDeepStrictEqual(state, previous)) continue;
        writes++;
        const expected = Math.ceil(algorithm.ttl(state, now)) + grace;
        longest = Math.max(longest, expected);
        expect(pttl).toBeLessThanOrEqual(longest);
        expect(pttl).toBeGreaterThanOrEqual(expected - elapsed - 1);
      }
      expect(writes).toBeGreaterThanOrEqual(3);
    },
  );

  it('a key whose state is as good as fresh is deleted, never kept without TTL', async () => {
    const prefix = uniquePrefix('ttl-fresh');
    const algorithm = tokenBucket({ capacity: 3, refillInterval: 3_000, refill: 'stepped' });
    const store = new RedisStore({ client: redis, prefix, timeout: 5_000 });
    const limiter = new Limiter({ algorithm, store });
    await limiter.check('k', { now: 0 });
    expect(await redis.pttl(store.keyFor(algorithm, 'k'))).toBeGreaterThan(0);
    // A refused request at a time the bucket is full again would store a full bucket: ttl 0.
    const strict = tokenBucket({ capacity: 1, refillInterval: 1_000, refill: 'stepped', strict: true });
    const strictLimiter = new Limiter({ algorithm: strict, store });
    expect(await strictLimiter.check('s', { now: 0, cost: 2 })).toMatchObject({
      allowed: false,
      retryAfter: -1,
    });
    expect(await redis.hexists(store.keyFor(strict, 's'), store.fieldFor(strict))).toBe(0);
  });

  it('one hash per user key: limiters naming the same limit share its field, and a short-lived field never shortens a longer one', async () => {
    const prefix = uniquePrefix('ttl-hash');
    const store = new RedisStore({ client: redis, prefix, timeout: 5_000 });
    const burst = tokenBucket({ capacity: 2, refillInterval: 1_000 });
    const daily = gcra({ rate: 100, period: 86_400_000 }); // one request: 864 s to forget
    const layered = new Limiter({
      limits: [
        { name: 'burst', algorithm: burst },
        { name: 'daily', algorithm: daily },
      ],
      store,
    });
    const alone = new Limiter({ limits: [{ name: 'burst', algorithm: burst }], store });
    await layered.check('u');
    const key = store.keyFor(burst, 'u');
    expect((await redis.hkeys(key)).sort()).toEqual(
      layered.limits.map((limit) => store.fieldFor(limit.algorithm)).sort(),
    );
    const day = await redis.pttl(key);
    // The daily field needs 864 s; the burst's a second.
    expect(day).toBeGreaterThan(860_000);
    // The same named limit in another limiter is the same field: its second token is the last.
    expect(await alone.check('u')).toMatchObject({ allowed: true, remaining: 0 });
    expect(await layered.check('u')).toMatchObject({ allowed: false, policy: 'burst' });
    // Writing the burst field alone (a second's ttl) left the hash's life for the daily field.
    expect(await redis.pttl(key)).toBeGreaterThan(day - 5_000);
    // A reset of one limiter forgets its fields only.
    await alone.reset('u');
    expect(await redis.hkeys(key)).toEqual([store.fieldFor(layered.limits[1]!.algorithm)]);
  });
});

describe('Cluster: layered limits across slots', () => {
  const limits = [
    { name: 'per-ip', algorithm: fixedWindow({ limit: 3, window: 60_000 }) },
    { name: 'per-token', algorithm: fixedWindow({ limit: 5, window: 60_000 }) },
  ];
  // Keys chosen to land in different slots (and on different nodes).
  const ip = 'ip:1';
  const token = 'token:zz';

  it('the two keys are in different slots', () => {
    const store = new RedisStore({ client: cluster });
    expect(hashSlot(store.keyFor(limits[0]!.algorithm, ip))).not.toBe(
      hashSlot(store.keyFor(limits[1]!.algorithm, token)),
    );
  });

  it('a refused request leaves no consumption behind in the slot that admitted it', async () => {
    const store = new RedisStore({ client: cluster, prefix: uniquePrefix('xslot'), timeout: 5_000 });
    const limiter = new Limiter({ limits, store });
    const narrow = new Limiter({ limits: [limits[1]!], store });
    for (let i = 0; i < 3; i++)
      expect(await limiter.check([ip, token], { now: 1_000 })).toMatchObject({ allowed: true });
    // per-ip is used up: these are refused and per-token must stay at 3 used.
    for (let i = 0; i < 5; i++) {
      const refused = await limiter.check([ip, token], { now: 1_000 });
      expect(refused).toMatchObject({ allowed: false, policy: 'per-ip' });
      expect(refused.limits[1]).toMatchObject({ allowed: true, remaining: 2 });
    }
    expect(
      await cluster.hget(
        store.keyFor(limiter.limits[1]!.algorithm, token),
        store.fieldFor(limiter.limits[1]!.algorithm),
      ),
    ).toBe('3,0');
    expect(await narrow.peek([token], { now: 1_000 })).toMatchObject({ remaining: 2 });
  });

  it('concurrent cross-slot requests never over-admit and no CROSSSLOT error escapes', async () => {
    const errors: unknown[] = [];
    const store = new RedisStore({
      client: cluster,
      prefix: uniquePrefix('xslot-race'),
      timeout: 5_000,
      failurePolicy: 'deny',
      onError: (event) => errors.push(event.error),
    });
    const limiter = new Limiter({ limits, store });
    const decisions = await Promise.all(
      Array.from({ length: 40 }, (_, i) => limiter.check([`ip:${i % 2}`, token], { now: 1_000 })),
    );
    expect(errors).toEqual([]);
    const allowed = decisions.filter((d) => d.allowed).length;
    expect(allowed).toBeLessThanOrEqual(5);
    const used = Number(
      (
        await cluster.hget(
          store.keyFor(limiter.limits[1]!.algorithm, token),
          store.fieldFor(limiter.limits[1]!.algorithm),
        )
      )?.split(',')[0] ?? 0,
    );
    // Never more consumed than admitted, and every admitted request is counted.
    expect(used).toBeGreaterThanOrEqual(allowed);
    expect(used).toBeLessThanOrEqual(5);
  });

  describe('a refused request gives back what it took in the slots that admitted it: same decisions as the memory store', () => {
    // Per-IP and per-token limits in different slots, costs 1 and 2. A tight per-IP limit refuses
    // first (the per-token slot is refunded), a loose one refuses last (the per-IP slot is).
    const perIps = [fixedWindow({ limit: 3, window: 60_000 }), fixedWindow({ limit: 9, window: 60_000 })];
    for (const [name, algorithm] of ALGORITHMS) {
      it(name, async () => {
        // Refused requests that a limit admitted, per limit: what the refunds must give back.
        const refunded = [0, 0];
        for (const perIp of perIps) {
          const layered = [
            { name: 'per-ip', algorithm: perIp },
            { name: 'per-token', algorithm },
          ];
          const memory = new Limiter({ limits: layered, store: new MemoryStore() });
          const store = new RedisStore({
            client: cluster,
            prefix: uniquePrefix('xslot-kind'),
            timeout: 5_000,
          });
          const redis = new Limiter({ limits: layered, store });
          for (let i = 0; i < 14; i++) {
            const options = { now: 1_000 + i * 900, cost: 1 + (i % 2) };
            const expected = await memory.check([ip, token], options);
            expect(await redis.check([ip, token], options), `step ${i}`).toEqual(expected);
            if (expected.allowed) continue;
            expected.limits.forEach((d, k) => {
              if (d.allowed) refunded[k]!++;
            });
          }
          const at = { now: 1_000 + 14 * 900 };
          expect(await redis.peek([ip, token], at)).toEqual(await memory.peek([ip, token], at));
        }
        expect(refunded[0]).toBeGreaterThan(0);
        expect(refunded[1]).toBeGreaterThan(0);
      });
    }
  });

  it("under contention the refund runs at the now the admitting slot consumed at (time: 'redis')", async () => {
    // A sliding window log gives back only the entry of that exact instant (µs here): a refund at
    // any other now gives back nothing.
    const log = slidingWindowLog({ limit: 10, window: 3_600_000 });
    const layered = [
      { name: 'per-ip', algorithm: fixedWindow({ limit: 3, window: 86_400_000 }) },
      { name: 'per-token', algorithm: log },
    ];
    const store = new RedisStore({
      client: cluster,
      prefix: uniquePrefix('xslot-time'),
      timeout: 5_000,
      time: 'redis',
      clock: () => 0, // a wrong app clock must not matter
    });
    const limiter = new Limiter({ limits: layered, store });
    const tokenOnly = new Limiter({ limits: [layered[1]!], store });
    for (let i = 0; i < 3; i++) expect(await limiter.check([ip, token])).toMatchObject({ allowed: true });
    await tokenOnly.peek(token); // its script is loaded on the per-token node
    for (let i = 0; i < 5; i++) {
      // The per-token node gets, in this order on one connection: this request's consume, another
      // request's write, then the refund (sent once the per-IP slot has refused): the key is no
      // longer what the consume wrote, so the refund path runs, not the restore.
      const [refused, other] = await Promise.all([limiter.check([ip, token]), tokenOnly.check(token)]);
      expect(refused).toMatchObject({ allowed: false, policy: 'per-ip' });
      expect(other).toMatchObject({ allowed: true });
      expect(refused.limits[1]).toMatchObject({ allowed: true, remaining: 6 - i });
    }
    const entries = (await cluster.hget(
      store.keyFor(limiter.limits[1]!.algorithm, token),
      store.fieldFor(limiter.limits[1]!.algorithm),
    ))!
      .split(',')
      .map(Number);
    // [at, count] pairs: the three admitted layered requests and the five others, nothing more.
    expect(entries.filter((_, i) => i % 2 === 1)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
  });

  it('uncontended, a refused request restores the exact previous state, even out of order', async () => {
    // A request whose now is behind the window the limit is in: refund cannot tell its units from
    // an older window's, restoring the value it replaced can.
    const window = fixedWindow({ limit: 5, window: 10_000 });
    const layered = [
      { name: 'per-ip', algorithm: fixedWindow({ limit: 1, window: 60_000 }) },
      { name: 'per-token', algorithm: window },
    ];
    const store = new RedisStore({ client: cluster, prefix: uniquePrefix('xslot-late'), timeout: 5_000 });
    const limiter = new Limiter({ limits: layered, store });
    expect(await limiter.check([ip, token], { now: 12_000 })).toMatchObject({ allowed: true });
    expect(await limiter.check([ip, token], { now: 9_000 })).toMatchObject({
      allowed: false,
      policy: 'per-ip',
    });
    expect(
      await cluster.hget(
        store.keyFor(limiter.limits[1]!.algorithm, token),
        store.fieldFor(limiter.limits[1]!.algorithm),
      ),
    ).toBe('1,10000');
  });

  it('a slot that fails: the failure policy answers and the slots that admitted are refunded', async () => {
    const events: RedisStoreErrorEvent[] = [];
    const store = new RedisStore({
      client: cluster,
      prefix: uniquePrefix('xslot-fail'),
      timeout: 5_000,
      failurePolicy: 'deny',
      breaker: false,
      onError: (event) => events.push(event),
    });
    const limiter = new Limiter({ limits, store });
    await limiter.check([ip, token], { now: 1_000 });
    // A real Redis error in the per-IP slot: its key holds a list (WRONGTYPE in the script).
    const ipKey = store.keyFor(limiter.limits[0]!.algorithm, ip);
    await cluster.del(ipKey);
    await cluster.rpush(ipKey, 'x');
    const decision = await limiter.check([ip, token], { now: 1_000 });
    expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable' });
    expect(events.map((e) => e.operation)).toEqual(['consume']);
    // Per-token admitted in its slot, then got it back: only the first request is counted.
    expect(
      await cluster.hget(
        store.keyFor(limiter.limits[1]!.algorithm, token),
        store.fieldFor(limiter.limits[1]!.algorithm),
      ),
    ).toBe('1,0');
  });

  it("a refund that cannot run is reported as 'rollback', and its units stay", async () => {
    // The refund of the per-token slot times out: a proxy in front of its node (reached through
    // ioredis' natMap) holds every command sent after the node's next reply, so the consume is
    // answered and the refund that follows it is not, whatever the machine's speed.
    const prefix = uniquePrefix('xslot-rollback');
    const probe = new RedisStore({ client: cluster, prefix, timeout: 5_000 });
    const slot = hashSlot(probe.keyFor(limits[1]!.algorithm, token));
    const address = (cluster as unknown as { slots: string[][] }).slots[slot]![0]!;
    const proxy = await startDelayProxy(Number(address.split(':')[1]));
    const ports = inject('redisClusterPorts');
    const own = new Cluster([{ host: '127.0.0.1', port: ports[0]! }], {
      enableOfflineQueue: false,
      lazyConnect: true,
      natMap: { [address]: { host: '127.0.0.1', port: proxy.port } },
    });
    try {
      await own.connect();
      const events: RedisStoreErrorEvent[] = [];
      const store = new RedisStore({
        client: storeClient(own),
        prefix,
        timeout: 1_000,
        failurePolicy: 'deny',
        breaker: false,
        onError: (event) => events.push(event),
      });
      const limiter = new Limiter({ limits, store });
      for (let i = 0; i < 3; i++) await limiter.check([ip, token], { now: 1_000 });
      proxy.holdRequestsAfterNextReply(60_000);
      const decision = await limiter.check([ip, token], { now: 1_000 });
      expect(decision).toMatchObject({ allowed: false, policy: 'per-ip', reason: 'rate-limited' });
      // The per-token limit reports what it holds: this request's unit stayed.
      expect(decision.limits[1]).toMatchObject({ allowed: true, remaining: 1 });
      expect(events.map((e) => [e.operation, e.keys])).toEqual([['rollback', 1]]);
      expect(events[0]!.error).toMatchObject({ code: ErrorCode.STORE_FAILURE });
      expect(
        await cluster.hget(
          store.keyFor(limiter.limits[1]!.algorithm, token),
          store.fieldFor(limiter.limits[1]!.algorithm),
        ),
      ).toBe('4,0');
    } finally {
      own.disconnect();
      await proxy.close();
    }
  });

  it('peek and reset work across slots', async () => {
    const store = new RedisStore({ client: cluster, prefix: uniquePrefix('xslot-reset'), timeout: 5_000 });
    const limiter = new Limiter({ limits, store });
    await limiter.check([ip, token], { now: 1_000 });
    expect(await limiter.peek([ip, token], { now: 1_000 })).toMatchObject({ allowed: true, remaining: 2 });
    await limiter.reset([ip, token]);
    expect(await limiter.peek([ip, token], { now: 1_000 })).toMatchObject({ remaining: 3 });
  });
});

describe('time', () => {
  it("time: 'redis' reads Redis TIME with sub-ms precision", async () => {
    const algorithm = gcra({ rate: 1, period: 60_000 });
    const store = new RedisStore({
      client,
      prefix: uniquePrefix('time'),
      time: 'redis',
      clock: () => 0, // a wildly wrong app clock must not matter
      timeout: 5_000,
    });
    const limiter = new Limiter({ algorithm, store });
    const before = Date.now();
    expect(await limiter.check('k')).toMatchObject({ allowed: true, resetAfter: 60_000 });
    const tat = Number(await client.hget(store.keyFor(algorithm, 'k'), store.fieldFor(algorithm)));
    const after = Date.now();
    expect(tat - 60_000).toBeGreaterThanOrEqual(before - 5);
    expect(tat - 60_000).toBeLessThanOrEqual(after + 5);
    // Sub-ms: a TIME whose µs are a whole ms (1 in 1000) is integer, so look at a few keys.
    const tats = [tat];
    for (const key of ['k1', 'k2', 'k3', 'k4']) {
      await limiter.check(key);
      tats.push(Number(await client.hget(store.keyFor(algorithm, key), store.fieldFor(algorithm))));
    }
    expect(tats.some((t) => !Number.isInteger(t))).toBe(true);
    // An explicit now still wins (replays).
    expect(await limiter.check('r', { now: 5_000 })).toMatchObject({ allowed: true });
    expect(await client.hget(store.keyFor(algorithm, 'r'), store.fieldFor(algorithm))).toBe('65000');
  });

  it("time: 'client' uses the injected clock when no now is passed", async () => {
    const algorithm = fixedWindow({ limit: 1, window: 1_000 });
    const store = new RedisStore({
      client,
      prefix: uniquePrefix('clock'),
      clock: () => 123_456.25,
      timeout: 5_000,
    });
    await new Limiter({ algorithm, store }).check('k');
    expect(await client.hget(store.keyFor(algorithm, 'k'), store.fieldFor(algorithm))).toBe('1,123000');
  });
});

describe('scripts', () => {
  it('recovers from NOSCRIPT after SCRIPT FLUSH', async () => {
    const server = await startRedis();
    const redis = await connectRedis(server.port);
    try {
      const algorithm = fixedWindow({ limit: 2, window: 60_000 });
      const limiter = new Limiter({ algorithm, store: new RedisStore({ client: redis, timeout: 5_000 }) });
      expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 1 });
      await redis.script('FLUSH');
      expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 0 });
      expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: false });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('writes at most 64 sets of params into scripts; past them, params travel as ARGV', async () => {
    const server = await startRedis();
    const redis = await connectRedis(server.port);
    try {
      const store = new RedisStore({ client: redis, timeout: 5_000 });
      const memory = new MemoryStore();
      for (let rate = 1; rate <= 70; rate++) {
        const algorithm = gcra({ rate, period: 60_000, burst: 2 });
        const onRedis = new Limiter({ algorithm, store });
        const inMemory = new Limiter({ algorithm, store: memory });
        for (const now of [0, 0, 0, 45_000]) {
          expect(await onRedis.check('k', { now })).toEqual(inMemory.checkSync('k', { now }));
        }
      }
      // 64 scripts with their params written in, and one for any params of the kind.
      const info = await redis.info('memory');
      expect(Number(/number_of_cached_scripts:(\d+)/.exec(info)?.[1])).toBe(65);
      // Layered limits past the cap: the batch script of their kinds, params as ARGV, same answers.
      const limits = [
        { name: 'burst', algorithm: tokenBucket({ capacity: 2, refillInterval: 30_000, strict: true }) },
        { name: 'meter', algorithm: gcra({ rate: 1, period: 20_000, burst: 3 }) },
      ];
      const onRedis = new Limiter({ limits, store });
      const inMemory = new Limiter({ limits, store: memory });
      for (const now of [0, 0, 0, 10_000, 25_000, 25_000, 60_000]) {
        expect(await onRedis.check('k', { now })).toEqual(inMemory.checkSync('k', { now }));
        expect(await onRedis.peek('k', { now })).toEqual(inMemory.peekSync('k', { now }));
      }
      const after = await redis.info('memory');
      expect(Number(/number_of_cached_scripts:(\d+)/.exec(after)?.[1])).toBe(66);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('answers an admission exactly when its packed reply would pass 2^53 (the list then)', async () => {
    // 1 token per 1e7 ms (a bucket refilling from empty in MAX_DURATION): each admission of 300
    // moves resetAfter up by 3e9 ms, and resetAfter * (1e6 + 1) passes 2^53 at the fourth.
    const algorithm = tokenBucket({ capacity: 1_000_000, refillAmount: 1, refillInterval: 10_000_000 });
    const onRedis = new Limiter({
      algorithm,
      store: new RedisStore({ client, prefix: uniquePrefix('packed'), timeout: 5_000 }),
    });
    const inMemory = new Limiter({ algorithm, store: new MemoryStore() });
    const resets: number[] = [];
    for (let i = 0; i < 4; i++) {
      const decision = await onRedis.check('k', { now: 1_000, cost: 300 });
      expect(decision).toEqual(inMemory.checkSync('k', { now: 1_000, cost: 300 }));
      resets.push(decision.resetAfter);
    }
    expect(resets).toEqual([3e9, 6e9, 9e9, 12e9]);
  });

  it('algorithms used only in layered limits take no single-limit script (nor a place under the cap)', async () => {
    const server = await startRedis();
    const redis = await connectRedis(server.port);
    try {
      const store = new RedisStore({ client: redis, timeout: 5_000 });
      for (let rate = 1; rate <= 40; rate++) {
        const limits = [
          { name: 'a', algorithm: gcra({ rate, period: 60_000, burst: 2 }) },
          { name: 'b', algorithm: fixedWindow({ limit: rate, window: 60_000 }) },
        ];
        const onRedis = new Limiter({ limits, store });
        const inMemory = new Limiter({ limits, store: new MemoryStore() });
        expect(await onRedis.check('k', { now: 0 })).toEqual(inMemory.checkSync('k', { now: 0 }));
      }
      // One lean batch script per pair, and nothing else.
      const scripts = await redis.info('memory');
      expect(Number(/number_of_cached_scripts:(\d+)/.exec(scripts)?.[1])).toBe(40);
      expect(Number(/cmdstat_eval:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1])).toBe(40);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('runs layered limits of lean kinds as one script with their params written in', async () => {
    const server = await startRedis();
    const redis = await connectRedis(server.port);
    try {
      const store = new RedisStore({ client: redis, timeout: 5_000 });
      const limits = [
        { name: 'burst', algorithm: tokenBucket({ capacity: 2, refillInterval: 30_000 }) },
        { name: 'meter', algorithm: gcra({ rate: 1, period: 20_000, burst: 3 }) },
      ];
      const onRedis = new Limiter({ limits, store });
      const inMemory = new Limiter({ limits, store: new MemoryStore() });
      for (const now of [0, 0, 0, 30_000]) {
        expect(await onRedis.check('k', { now })).toEqual(inMemory.checkSync('k', { now }));
      }
      // The same limits again (another limiter, same algorithms): no new script.
      const again = new Limiter({ limits, store });
      expect(await again.check('k', { now: 30_000 })).toEqual(inMemory.checkSync('k', { now: 30_000 }));
      const scripts = await redis.info('memory');
      expect(Number(/number_of_cached_scripts:(\d+)/.exec(scripts)?.[1])).toBe(1);
      expect(await redis.pttl(store.keyFor(onRedis.limits[1]!.algorithm, 'k'))).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('a lean batch never overwrites a key holding another type: WRONGTYPE goes to the policy', async () => {
    const errors: RedisStoreErrorEvent[] = [];
    const store = new RedisStore({
      client,
      prefix: uniquePrefix('wrongtype'),
      failurePolicy: 'deny',
      onError: (event) => errors.push(event),
      timeout: 5_000,
    });
    const limits = [
      { name: 'burst', algorithm: tokenBucket({ capacity: 3, refillInterval: 10_000 }) },
      { name: 'steady', algorithm: tokenBucket({ capacity: 9, refillInterval: 1_000, refill: 'stepped' }) },
    ];
    const limiter = new Limiter({ limits, store });
    for (const limit of limiter.limits) {
      const foreign = store.keyFor(limit.algorithm, 'k');
      await client.rpush(foreign, 'someone else');
      expect(await limiter.check('k', { now: 1_000 })).toMatchObject({
        allowed: false,
        reason: 'store-unavailable',
      });
      expect(await client.type(foreign)).toBe('list');
      await client.del(foreign);
    }
    expect(errors.map((event) => String(event.error))).toEqual([
      expect.stringContaining('WRONGTYPE'),
      expect.stringContaining('WRONGTYPE'),
    ]);
  });

  it('a batch of no calls answers nothing, without a script or an error', async () => {
    const errors: RedisStoreErrorEvent[] = [];
    const store = new RedisStore({
      client,
      prefix: uniquePrefix('empty'),
      onError: (e) => errors.push(e),
      timeout: 5_000,
    });
    expect(await store.consume([], 1_000)).toEqual([]);
    expect(await store.peek([], 1_000)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('runs the most layered limits a lean batch script inlines (Lua caps locals per function)', async () => {
    const errors: unknown[] = [];
    const store = new RedisStore({
      client,
      prefix: uniquePrefix('many'),
      failurePolicy: 'deny',
      onError: (event) => errors.push(event),
      timeout: 5_000,
    });
    const kinds = [
      (i: number) => tokenBucket({ capacity: 3 + i, refillInterval: 10_000, strict: i % 2 === 0 }),
      (i: number) => tokenBucket({ capacity: 3 + i, refillInterval: 10_000, refill: 'stepped' }),
      (i: number) => gcra({ rate: 2 + i, period: 10_000 }),
      (i: number) => fixedWindow({ limit: 3 + i, window: 10_000 }),
      (i: number) => leakyBucketQueue({ rate: 2, period: 10_000, burst: 1 + i, queue: 2 }),
    ];
    const limits = Array.from({ length: 12 }, (_, i) => ({
      name: `l${i}`,
      algorithm: kinds[i % kinds.length]!(i),
    }));
    const onRedis = new Limiter({ limits, store });
    const inMemory = new Limiter({ limits, store: new MemoryStore() });
    for (const now of [0, 0, 0, 0, 1_000, 1_000, 5_000, 20_000]) {
      expect(await onRedis.check('k', { now })).toEqual(inMemory.checkSync('k', { now }));
    }
    expect(errors).toEqual([]);
  });

  it('answers layered admissions exactly when a packed decision would pass 2^53 (the list then)', async () => {
    const limits = [
      {
        name: 'big',
        algorithm: tokenBucket({ capacity: 1_000_000, refillAmount: 1, refillInterval: 10_000_000 }),
      },
      { name: 'small', algorithm: gcra({ rate: 1, period: 1_000, burst: 10_000 }) },
    ];
    const onRedis = new Limiter({
      limits,
      store: new RedisStore({ client, prefix: uniquePrefix('packed'), timeout: 5_000 }),
    });
    const inMemory = new Limiter({ limits, store: new MemoryStore() });
    const resets: number[] = [];
    for (let i = 0; i < 4; i++) {
      const decision = await onRedis.check('k', { now: 1_000, cost: 300 });
      expect(decision).toEqual(inMemory.checkSync('k', { now: 1_000, cost: 300 }));
      resets.push(decision.limits[0]!.resetAfter);
    }
    expect(resets).toEqual([3e9, 6e9, 9e9, 12e9]);
  });

  it('a GCRA whose emission interval is below EPSILON reports remaining as in memory (burst − 1 after one)', async () => {
    const algorithm = gcra({ rate: 1_000_000_000, period: 3_600_000, burst: 1_000_000_000 });
    const store = new RedisStore({ client, prefix: uniquePrefix('fast-gcra'), timeout: 5_000 });
    const single = new Limiter({ algorithm, store });
    const layered = new Limiter({
      limits: [
        { name: 'fast', algorithm },
        { name: 'slow', algorithm: gcra({ rate: 5, period: 1_000 }) },
      ],
      store,
    });
    const memory = new MemoryStore();
    // One fresh key per step: a state worth 3.6 µs has a PX of 1 ms, which Redis counts in real
    // time while these steps share one instant.
    const steps = [1_763_786_000_000.5, 1_763_786_000_000.5, 1_763_786_000_001];
    for (const [i, now] of steps.entries()) {
      expect((await layered.peek(`k${i}`, { now })).limits[0]!.remaining).toBe(1_000_000_000);
      const decision = await single.check(`k${i}`, { now });
      expect(decision).toEqual(new Limiter({ algorithm, store: memory }).checkSync(`k${i}`, { now }));
      expect(decision.remaining).toBe(999_999_999);
    }
  });

  it('Lua twins decide as TypeScript above 50 units per ms (a slack below EPSILON), single and layered', async () => {
    // States are set before each step with a long PX: a state worth microseconds would otherwise
    // expire in Redis' real time between steps that share one instant.
    const algorithms = [
      tokenBucket({ capacity: 12, refillAmount: 1_000_000, refillInterval: 1_000 }),
      gcra({ rate: 1_000_000, period: 1_000, burst: 9 }), // faster is below MIN_UNIT_TIME
      leakyBucketQueue({ rate: 700_000, period: 1_000, burst: 4, queue: 6 }),
    ];
    const store = new RedisStore({ client, prefix: uniquePrefix('fast'), timeout: 5_000 });
    const start = 1_763_786_000_000.25;
    for (const layered of [false, true]) {
      const sets = layered ? [algorithms.slice(0, 2), algorithms.slice(1)] : algorithms.map((a) => [a]);
      for (const set of sets) {
        const states: (number | undefined)[] = set.map(() => undefined);
        let now = start;
        for (let step = 0; step < 40; step++) {
          now += step % 7 === 0 ? 0.0037 * step : 0;
          const cost = 1 + (step % 3);
          const calls = set.map((algorithm) => ({ algorithm, key: 'k', cost, policy: algorithm.kind }));
          for (const [i, call] of calls.entries()) {
            const key = store.keyFor(call.algorithm, 'k');
            const field = store.fieldFor(call.algorithm);
            if (states[i] === undefined) await client.hdel(key, field);
            else await client.multi().hset(key, field, String(states[i])).pexpire(key, 60_000).exec();
          }
          // The memory store's batch rule, on the pure transitions.
          const transitions = calls.map((call, i) =>
            call.algorithm.consume(states[i] as never, now, cost, call.policy),
          );
          const all = transitions.every((t) => t.decision.allowed);
          const expected = calls.map((call, i) =>
            all || !transitions[i]!.decision.allowed
              ? transitions[i]!.decision
              : call.algorithm.peek(states[i] as never, now, cost, call.policy),
          );
          expect(await store.consume(calls, now), `step ${step}`).toEqual(expected);
          for (const [i, call] of calls.entries()) {
            if (all || !transitions[i]!.decision.allowed) states[i] = transitions[i]!.state as number;
            const stored = await client.hget(
              store.keyFor(call.algorithm, 'k'),
              store.fieldFor(call.algorithm),
            );
            const ttl = states[i] === undefined ? 0 : call.algorithm.ttl(states[i] as never, now);
            if (ttl <= 0) expect(stored).toBeNull();
            // A state written with a PX of a few ms may have expired in real time since.
            else if (stored !== null) expect(Number(stored)).toBe(states[i]);
            else expect(ttl).toBeLessThan(1_000);
          }
        }
      }
    }
  });

  it('refuses an algorithm it has no Lua twin for, with a coded error', async () => {
    const store = new RedisStore({ client, timeout: 5_000 });
    const fake = { ...gcra({ rate: 1, period: 1 }), kind: 'third-party' } as unknown as Algorithm;
    expect(() => store.consume([{ algorithm: fake, key: 'k', cost: 1, policy: 'p' }], 0)).toThrow(
      expect.objectContaining({ code: ErrorCode.UNSUPPORTED }),
    );
  });
});

describe('deny cache', () => {
  it('refuses a refused key locally until its retryAfter, then asks Redis again', async () => {
    let now = 1_000_000;
    const algorithm = fixedWindow({ limit: 2, window: 10_000 });
    // A server of this test's own: Redis counts the scripts it runs.
    const scripts = await countScripts();
    // A generous timeout: under load a script may take longer than the default 100 ms, and the
    // failure policy's answer would then stand in for Redis's (a verdict that depends on the load).
    const store = new RedisStore({ client: scripts.client, denyCache: 2, clock: () => now, timeout: 5_000 });
    const limiter = new Limiter({ algorithm, store });
    try {
      await limiter.check('k');
      await limiter.check('k');
      expect(await limiter.check('k')).toMatchObject({ allowed: false, retryAfter: 10_000 });
      now += 4_000;
      expect(await limiter.check('k')).toMatchObject({
        allowed: false,
        retryAfter: 6_000,
        reason: 'rate-limited',
      });
      expect(await limiter.check('k', { cost: 2 })).toMatchObject({ allowed: false, retryAfter: 6_000 });
      now += 6_000;
      expect(await limiter.check('k')).toMatchObject({ allowed: true });
      // Three scripts before the refusal was cached, none while cached, one after it expired.
      expect(await scripts.count()).toBe(4);
    } finally {
      await scripts.stop();
    }
  });
});

describe('options', () => {
  it.each([
    ['a prefix with a brace', { client, prefix: 'a{b' }, ErrorCode.INVALID_OPTION],
    ['a zero timeout', { client, timeout: 0 }, ErrorCode.INVALID_OPTION],
    ['a negative deny cache', { client, denyCache: -1 }, ErrorCode.INVALID_OPTION],
    ['a breaker opening after 0 failures', { client, breaker: { failures: 0 } }, ErrorCode.INVALID_OPTION],
    [
      'a breaker cooldown that is not a number',
      { client, breaker: { cooldown: 'soon' } },
      ErrorCode.INVALID_OPTION,
    ],
    ['an unknown failure policy', { client, failurePolicy: 'maybe' }, ErrorCode.INVALID_OPTION],
    ['an unknown time source', { client, time: 'server' }, ErrorCode.INVALID_OPTION],
    ['a negative replay grace', { client, replayGrace: -1 }, ErrorCode.INVALID_OPTION],
    ['an unreadable replay grace', { client, replayGrace: 'long' }, ErrorCode.INVALID_DURATION],
    ['a replay grace past 30 days', { client, replayGrace: '31d' }, ErrorCode.INVALID_OPTION],
    ['a misspelt option', { client, timeuot: 5 }, ErrorCode.UNKNOWN_OPTION],
    ['a client that is not ioredis', { client: {} }, ErrorCode.INVALID_OPTION],
    ['no client', {}, ErrorCode.MISSING_OPTION],
  ])('rejects %s', (_label, options, code) => {
    expect(() => new RedisStore(options as never)).toThrow(expect.objectContaining({ code }));
  });

  it('accepts a replay grace of 0 (none), in ms or as a duration', () => {
    for (const replayGrace of [0, 1, 2_500, '90s', '30d'] as const) {
      expect(() => new RedisStore({ client, replayGrace })).not.toThrow();
    }
  });
});
