import { type Decision, fixedWindow, Limiter, MemoryStore } from '@sluice/core';
import { type BreakerState, RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import type { Redis } from './client-family.js';
import { connectRedis } from './clients.js';

const TIMEOUT = 100;
// Generous for a loaded 2-core machine: the call must not wait much past its own timeout.
const BOUND = TIMEOUT + 200;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

async function timed(run: () => Promise<Decision>): Promise<{ decision: Decision; ms: number }> {
  const start = performance.now();
  const decision = await run();
  return { decision, ms: performance.now() - start };
}

describe('faults', () => {
  let server: RedisProcess;
  let client: Redis;
  let clock = 0;
  let errors: RedisStoreErrorEvent[];
  let transitions: BreakerState[];
  const algorithm = fixedWindow({ limit: 10, window: 60_000 });

  beforeEach(async () => {
    server = await startRedis();
    client = await connectRedis(server.port);
    clock = 1_000_000;
    errors = [];
    transitions = [];
  });
  afterEach(async () => {
    client.disconnect();
    await server.stop();
    expect(unhandled).toEqual([]);
  });

  function store(options: Partial<ConstructorParameters<typeof RedisStore>[0]> = {}): RedisStore {
    return new RedisStore({
      client,
      timeout: TIMEOUT,
      clock: () => clock,
      breaker: { failures: 3, cooldown: 5_000 },
      onError: (event) => errors.push(event),
      onBreakerChange: (state) => transitions.push(state),
      ...options,
    });
  }

  it("a hung Redis (SIGSTOP): 'deny' answers within the timeout, the breaker opens, probes and closes", async () => {
    const redisStore = store({ failurePolicy: 'deny' });
    const limiter = new Limiter({ algorithm, store: redisStore });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 });

    server.pause();
    for (let i = 0; i < 3; i++) {
      const { decision, ms } = await timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
      expect(ms).toBeLessThan(BOUND);
      expect(ms).toBeGreaterThanOrEqual(TIMEOUT - 5);
      expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable', retryAfter: 5_000 });
    }
    expect(errors).toHaveLength(3);
    expect(errors[0]).toMatchObject({ operation: 'consume', keys: 1, breaker: 'closed' });
    expect(errors[0]!.error).toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
    expect(errors[2]).toMatchObject({ breaker: 'open' });
    expect(redisStore.breakerState).toBe('open');

    // Open: no more waiting for the timeout, no more error reports.
    const fast = await timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
    expect(fast.ms).toBeLessThan(TIMEOUT / 2);
    expect(fast.decision).toMatchObject({ allowed: false, reason: 'store-unavailable', retryAfter: 5_000 });
    clock += 2_000;
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ retryAfter: 3_000 });
    expect(errors).toHaveLength(3);

    // Cooldown over, Redis still hung: the one probe fails, the breaker reopens; a call made
    // while the probe is out fails fast.
    clock += 3_000;
    const probe = timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
    const during = await timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
    expect(during.ms).toBeLessThan(TIMEOUT / 2);
    expect((await probe).decision).toMatchObject({ reason: 'store-unavailable' });
    expect(redisStore.breakerState).toBe('open');
    expect(errors).toHaveLength(4);

    // Redis back; the next probe (after another cooldown) closes the breaker.
    server.resume();
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ reason: 'store-unavailable' });
    clock += 5_000;
    // The four calls that timed out were still executed by Redis once it resumed: a timeout
    // does not cancel a command already sent (see the README).
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 4 });
    expect(redisStore.breakerState).toBe('closed');
    expect(transitions).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
  });

  it("fail open ('allow') within the timeout, without a breaker", async () => {
    const limiter = new Limiter({ algorithm, store: store({ breaker: false, failurePolicy: 'allow' }) });
    server.pause();
    try {
      for (let i = 0; i < 4; i++) {
        const { decision, ms } = await timed(
          () => limiter.check('k', { now: 0, cost: 2 }) as Promise<Decision>,
        );
        expect(ms).toBeLessThan(BOUND);
        // Counted nowhere: no quota to vouch for (adapters write no RateLimit headers for it).
        expect(decision).toMatchObject({ allowed: true, limit: 10, reason: 'store-unavailable' });
      }
      expect(errors).toHaveLength(4);
      expect(errors.every((e) => e.breaker === 'closed')).toBe(true);
      expect(transitions).toEqual([]);
      const peeked = await timed(() => limiter.peek('k', { now: 0 }) as Promise<Decision>);
      expect(peeked.ms).toBeLessThan(BOUND);
      expect(peeked.decision).toMatchObject({ allowed: true, reason: 'store-unavailable' });
    } finally {
      server.resume();
    }
  });

  // Issue 37.5: the Redis README's bound, over a window that spans the outage's start, is the
  // limit (Redis's count) + outageShare × the limit (this process's local count, from zero).
  it.each([
    [1, 10],
    [0.5, 5],
  ])(
    "'local' with outageShare %s: a window spanning the outage's start admits Redis's count + the local share, and no more",
    async (outageShare, local) => {
      // A generous timeout (Redis's admissions must be Redis's on a loaded machine), and a breaker
      // that opens on the first call Redis does not answer: the rest are decided locally at once.
      const limiter = new Limiter({
        algorithm,
        store: store({
          failurePolicy: 'local',
          outageShare,
          timeout: 2_000,
          breaker: { failures: 1, cooldown: 60_000 },
        }),
      });
      for (let i = 0; i < 5; i++) {
        expect(await limiter.check('k')).toMatchObject({ allowed: true, remaining: 9 - i });
      }
      server.pause();
      try {
        const during: Decision[] = [];
        for (let i = 0; i < 15; i++) during.push(await limiter.check('k'));
        expect(
          during.every(
            (d) => d.reason === undefined || d.reason === 'store-unavailable' || d.reason === 'rate-limited',
          ),
        ).toBe(true);
        // Counted from zero in this process: its whole share again, then refusals.
        expect(during.filter((d) => d.allowed)).toHaveLength(local);
        expect(during.slice(local).every((d) => !d.allowed)).toBe(true);
        // Over the window: Redis's 5 + the local share, where the limit is 10: past the limit with
        // a share of 1 (the local count cannot know Redis's), within limit + share × limit.
        const admitted = 5 + during.filter((d) => d.allowed).length;
        expect(admitted).toBeLessThanOrEqual(10 + outageShare * 10);
        if (outageShare === 1) expect(admitted).toBe(15);
      } finally {
        server.resume();
      }
    },
  );

  it('calls in flight together each time out on their own deadline (one timer shared by all calls)', async () => {
    const waves: Promise<{ decision: Decision; ms: number }>[][] = [[], []];
    let limiter: Limiter | undefined;
    const start = (wave: number) => {
      for (let i = 0; i < 5; i++) {
        const key = i % 2 === 0 ? `k${i}` : [`k${i}`, `j${i}`];
        const run = () =>
          (i === 4 ? limiter!.peek(key, { now: 0 }) : limiter!.check(key, { now: 0 })) as Promise<Decision>;
        waves[wave]!.push(timed(run));
      }
    };
    // The second wave starts when the first times out: the shared timer must re-arm for it.
    const layered = new Limiter({
      limits: [
        { name: 'a', algorithm },
        { name: 'b', algorithm: fixedWindow({ limit: 5, window: 1_000 }) },
      ],
      store: store({
        breaker: false,
        failurePolicy: 'deny',
        onError: (event) => {
          errors.push(event);
          if (errors.length === 1) start(1);
        },
      }),
    });
    limiter = layered;
    server.pause();
    try {
      start(0);
      const first = await Promise.all(waves[0]!);
      const second = await Promise.all(waves[1]!);
      for (const { decision, ms } of [...first, ...second]) {
        expect(ms).toBeGreaterThanOrEqual(TIMEOUT - 1);
        expect(ms).toBeLessThan(BOUND);
        expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable' });
      }
      expect(second).toHaveLength(5);
      expect(errors).toHaveLength(10);
    } finally {
      server.resume();
    }
  });

  it('Redis killed then restarted on the same port: fallback store, then Redis again without a new store', async () => {
    const fallback = new MemoryStore();
    const redisStore = store({ failurePolicy: fallback });
    const limiter = new Limiter({ algorithm, store: redisStore });
    expect(await limiter.check('k', { now: 0, cost: 5 })).toMatchObject({ allowed: true, remaining: 5 });

    await server.kill();
    // The fallback counts on its own, from fresh.
    for (let i = 0; i < 4; i++) {
      const { decision, ms } = await timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
      expect(ms).toBeLessThan(BOUND);
      expect(decision).toMatchObject({ allowed: true, remaining: 9 - i });
    }
    expect(redisStore.breakerState).toBe('open');
    expect(errors.length).toBe(3);
    expect(fallback.inspect(algorithm, 'k')).toEqual([4, 0]);

    const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()));
    await server.restart();
    await ready;
    clock += 5_000;
    // Redis restarted empty (no persistence): its count starts again; the scripts are reloaded
    // after NOSCRIPT.
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 });
    expect(redisStore.breakerState).toBe('closed');
    expect(await limiter.check('k', { now: 0, cost: 9 })).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: false, reason: 'rate-limited' });
    expect(transitions).toEqual(['open', 'half-open', 'closed']);
  });

  it('a deterministic error of one key (WRONGTYPE) is reported and answered per call, but never opens the breaker', async () => {
    // Issue 11 §3.3: one broken key opened the breaker, which then failed open a healthy limit.
    const redisStore = store();
    const limiter = new Limiter({ algorithm, store: redisStore });
    await client.rpush(redisStore.keyFor(algorithm, 'broken'), 'x');
    // Answered by the default policy: the same limit, counted in this process.
    for (let i = 0; i < 6; i++) {
      expect(await limiter.check('broken', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 - i });
    }
    expect(errors).toHaveLength(6);
    expect(errors.every((e) => e.operation === 'consume' && e.breaker === 'closed')).toBe(true);
    expect(String(errors[0]!.error)).toContain('WRONGTYPE');
    expect(redisStore.breakerState).toBe('closed');
    expect(transitions).toEqual([]);
    // The healthy key is still counted in Redis, down to a refusal.
    for (let i = 0; i < 10; i++) {
      expect(await limiter.check('healthy', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 - i });
    }
    expect(await limiter.check('healthy', { now: 0 })).toMatchObject({
      allowed: false,
      reason: 'rate-limited',
    });
    // A reset of the broken key works (and is no failure either).
    await limiter.reset('broken');
    expect(await limiter.check('broken', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 });
    expect(errors).toHaveLength(6);
  });

  it('a deterministic error answered to the half-open probe closes the breaker: Redis answered', async () => {
    const redisStore = store({ failurePolicy: 'deny' });
    const limiter = new Limiter({ algorithm, store: redisStore });
    await client.rpush(redisStore.keyFor(algorithm, 'broken'), 'x');
    server.pause();
    try {
      for (let i = 0; i < 3; i++) await limiter.check('k', { now: 0 });
    } finally {
      server.resume();
    }
    expect(redisStore.breakerState).toBe('open');
    clock += 5_000;
    expect(await limiter.check('broken', { now: 0 })).toMatchObject({ reason: 'store-unavailable' });
    expect(redisStore.breakerState).toBe('closed');
  });

  it('reset while Redis is down rejects with a coded error, never unhandled', async () => {
    const limiter = new Limiter({ algorithm, store: store() });
    server.pause();
    try {
      const start = performance.now();
      await expect(limiter.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
      expect(performance.now() - start).toBeLessThan(BOUND);
      expect(errors[0]).toMatchObject({ operation: 'reset' });
    } finally {
      server.resume();
    }
  });

  it('a throwing onError hook does not break the failure policy', async () => {
    const limiter = new Limiter({
      algorithm,
      store: store({
        failurePolicy: 'deny',
        onError: () => {
          throw new Error('hook bug');
        },
      }),
    });
    await server.kill();
    expect(await limiter.check('k', { now: 0 })).toMatchObject({
      allowed: false,
      reason: 'store-unavailable',
    });
    await server.restart();
  });
});
