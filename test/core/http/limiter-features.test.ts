import { type Decision, fixedWindow, MemoryStore, type Store, tokenBucket } from '@sluice/core';
import { HttpLimiter, type HttpLimitOptions, type RequestAccessBase } from '@sluice/core/adapter';
import { describe, expect, it } from 'vitest';

// Issue 14 at the core's level (HttpLimiter, below every adapter): option validation, plans asked
// once for concurrent requests, and app-code calls that fail without rejecting.

interface Req {
  user?: string;
}
const access: RequestAccessBase<Req> = {
  ip: () => '127.0.0.1',
  method: () => 'GET',
  route: () => undefined,
  header: (req, name) => (name === 'x-user' ? req.user : undefined),
  proxyTrust: () => 'none',
};
const byUser = (req: Req) => req.user;

/** A fixed instant: windows aligned to the epoch must not end between a test's requests. */
const T0 = Date.UTC(2026, 0, 1, 0, 0, 1);

function limiter(options: HttpLimitOptions<Req>, errors: Error[] = []): HttpLimiter<Req> {
  const clocked = { store: new MemoryStore({ clock: () => T0 }), ...options };
  return new HttpLimiter<Req>('test', clocked, access, {
    onError: (error) => errors.push(error),
    onWarning: () => undefined,
    onReleaseError: () => undefined,
  });
}

const code = (make: () => unknown) => {
  try {
    make();
    return 'created';
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('options of issue 14, validated at creation', () => {
  const algorithm = fixedWindow({ limit: 3, window: '10s' });
  it.each([
    [{ algorithm, count: 'sometimes' }, 'ERR_SLUICE_INVALID_OPTION'],
    [{ algorithm, count: 'failed' }, 'created'],
    [{ algorithm, count: () => true }, 'created'],
    [{ algorithm, planCache: { max: 0 } }, 'ERR_SLUICE_INVALID_OPTION'],
    [{ algorithm, planCache: { ttl: 'soon' } }, 'ERR_SLUICE_INVALID_DURATION'],
    [{ algorithm, planCache: { size: 10 } }, 'ERR_SLUICE_UNKNOWN_OPTION'],
    [{ algorithm, planCache: 5 }, 'ERR_SLUICE_INVALID_OPTION'],
    // A plan per request needs a name: headers and stored keys use it before any plan is known.
    [{ algorithm: () => algorithm }, 'ERR_SLUICE_MISSING_OPTION'],
    [{ name: 'plan', algorithm: () => algorithm, planCache: { max: 10, ttl: 0 } }, 'created'],
    [
      {
        limits: [
          { name: 'a', algorithm: () => algorithm },
          { name: 'a', algorithm },
        ],
      },
      'ERR_SLUICE_DUPLICATE_LIMIT',
    ],
    [
      { limits: [{ name: 'a', algorithm: () => algorithm }, { algorithm: 'x' }] },
      'ERR_SLUICE_UNKNOWN_ALGORITHM',
    ],
  ] as [HttpLimitOptions<Req>, string][])('%o: %s', (options, expected) => {
    expect(code(() => limiter(options))).toBe(expected);
  });

  it('count on a store that cannot give units back is refused at creation, not counted silently', () => {
    const memory = new MemoryStore();
    // A store without refund (a custom one): every response would keep its units.
    const keeping: Store = {
      consume: (calls, now) => memory.consume(calls, now),
      peek: (calls, now) => memory.peek(calls, now),
      reset: (calls) => memory.reset(calls),
      shutdown: () => memory.shutdown(),
    };
    expect(code(() => limiter({ algorithm, count: 'failed', store: keeping }))).toBe(
      'ERR_SLUICE_UNSUPPORTED',
    );
    expect(code(() => limiter({ algorithm, count: () => true, store: keeping }))).toBe(
      'ERR_SLUICE_UNSUPPORTED',
    );
    expect(code(() => limiter({ algorithm, count: 'all', store: keeping }))).toBe('created');
  });

  it('settle refuses an actual cost that is not an integer ≥ 0, by throwing (the app’s mistake)', () => {
    const http = limiter({ algorithm, key: byUser });
    for (const actual of [-1, 1.5, Number.NaN, '3' as unknown as number]) {
      expect(code(() => http.settle({ user: 'ann' }, actual))).toBe('ERR_SLUICE_INVALID_COST');
    }
  });

  it('a plan that is not an algorithm, or a queue in refuse mode, follows the failure policy', async () => {
    for (const bad of [{ limit: 3 }, () => undefined]) {
      const errors: Error[] = [];
      const http = limiter(
        { name: 'plan', key: byUser, algorithm: () => bad as never, storeFailure: 'deny' },
        errors,
      );
      const decision = (await http.evaluate({ user: 'ann' })) as Decision;
      expect([decision.allowed, decision.reason]).toEqual([false, 'store-unavailable']);
      expect((errors[0] as { code?: string }).code).toBe('ERR_SLUICE_UNKNOWN_ALGORITHM');
    }
  });
});

describe('plans per request', () => {
  it('concurrent requests of one key ask the plan function once', async () => {
    let asked = 0;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const http = limiter({
      name: 'plan',
      key: byUser,
      algorithm: async () => {
        asked++;
        await answered;
        return fixedWindow({ limit: 10, window: '10s' });
      },
    });
    const pending = [1, 2, 3].map(() => http.evaluate({ user: 'ann' }));
    answer();
    const decisions = (await Promise.all(pending)) as Decision[];
    expect(asked).toBe(1);
    expect(decisions.map((d) => d.remaining).sort()).toEqual([7, 8, 9]);
  });

  it('a plan function that rejects is asked again on the next request (nothing cached)', async () => {
    let calls = 0;
    const errors: Error[] = [];
    const http = limiter(
      {
        name: 'plan',
        key: byUser,
        algorithm: async () => {
          calls++;
          if (calls === 1) throw new Error('database down');
          return tokenBucket({ capacity: 2, refillInterval: '1s' });
        },
      },
      errors,
    );
    expect(await http.evaluate({ user: 'ann' })).toBeUndefined();
    expect(errors.map((e) => e.message)).toEqual(['database down']);
    expect(((await http.evaluate({ user: 'ann' })) as Decision).remaining).toBe(1);
    expect(calls).toBe(2);
  });
});

describe('app-code calls never reject on store failures', () => {
  const failingAfterConsume = (store: MemoryStore): Store => ({
    consume: (calls, now) => store.consume(calls, now),
    peek: (calls, now) => store.peek(calls, now),
    reset: (calls) => store.reset(calls),
    refund: () => Promise.reject(new Error('refund failed')),
    charge: () => Promise.reject(new Error('charge failed')),
    shutdown: () => store.shutdown(),
  });

  it('settle: a failing refund or charge goes to onError', async () => {
    const errors: Error[] = [];
    const http = limiter(
      {
        algorithm: fixedWindow({ limit: 10, window: '10s' }),
        key: byUser,
        cost: 5,
        store: failingAfterConsume(new MemoryStore()),
      },
      errors,
    );
    const req = { user: 'ann' };
    await http.evaluate(req);
    await expect(http.settle(req, 2)).resolves.toBeUndefined();
    await expect(http.settle(req, 9)).resolves.toBeUndefined();
    expect(errors.map((e) => e.message)).toEqual(['refund failed', 'charge failed']);
  });

  it('count: a throwing count function goes to onError and the units stay counted', async () => {
    const errors: Error[] = [];
    const store = new MemoryStore();
    const http = limiter(
      {
        algorithm: fixedWindow({ limit: 2, window: '10s' }),
        key: byUser,
        store,
        count: () => {
          throw new Error('count failed');
        },
      },
      errors,
    );
    const req = { user: 'ann' };
    await http.evaluate(req);
    http.outcome(req, 200, true);
    expect(errors.map((e) => e.message)).toEqual(['count failed']);
    expect(((await http.peek({ user: 'ann' })) as Decision).remaining).toBe(1);
  });

  it('a request that was refused has nothing to settle or give back', async () => {
    const store = new MemoryStore();
    const http = limiter({
      algorithm: fixedWindow({ limit: 1, window: '10s' }),
      key: byUser,
      store,
      count: 'failed',
    });
    await http.evaluate({ user: 'ann' });
    const refused = { user: 'ann' };
    expect(((await http.evaluate(refused)) as Decision).allowed).toBe(false);
    await http.settle(refused, 0);
    http.outcome(refused, 200, true);
    expect(((await http.peek({ user: 'ann' })) as Decision).remaining).toBe(0);
  });
});

// The merge of issue 14's plans per request with features-b's blocks and shadow mode: a limit whose
// plan is per request takes `enforce` and `block` as a fixed limit does.
describe('plans per request with shadow mode and blocks', () => {
  const plan = () => fixedWindow({ limit: 1, window: '10s' });

  it('a planned limit in shadow mode never refuses, and reports its refusal as shadow', async () => {
    const http = limiter({ name: 'plan', key: byUser, algorithm: plan, enforce: false });
    await http.evaluate({ user: 'ann' });
    const second = (await http.evaluate({ user: 'ann' }))!;
    expect(second.allowed).toBe(true);
    const own = second.limits.length === 0 ? second : second.limits[0]!;
    expect(own.shadow).toBe(true);
  });

  it('a planned limit with a block refuses with reason blocked after its refusal', async () => {
    const http = limiter({ name: 'plan', key: byUser, algorithm: plan, block: '1m' });
    expect((await http.evaluate({ user: 'bob' }))!.allowed).toBe(true);
    expect((await http.evaluate({ user: 'bob' }))!.reason).toBe('rate-limited');
    const third = (await http.evaluate({ user: 'bob' }))!;
    expect(third.allowed).toBe(false);
    expect(third.reason).toBe('blocked');
  });

  it.each([
    [{ name: 'plan', algorithm: plan, enforce: 'no' }, 'ERR_SLUICE_INVALID_OPTION'],
    [{ name: 'plan', algorithm: plan, block: 'soon' }, 'ERR_SLUICE_INVALID_DURATION'],
    [{ limits: [{ name: 'plan', algorithm: plan, enforce: false, block: '1m' }] }, 'created'],
    // main's Limiter refuses a store that is not a Store; a set with plans checks it too.
    [{ name: 'plan', algorithm: plan, store: {} as never }, 'ERR_SLUICE_INVALID_OPTION'],
  ] as [HttpLimitOptions<Req>, string][])('%o: %s', (options, expected) => {
    expect(code(() => limiter(options))).toBe(expected);
  });
});

describe('regression: a store that could not be asked writes no quota headers', () => {
  it("RedisStore's 'deny' answer (reason store-unavailable) sets no RateLimit headers, as the adapters' own storeFailure: 'deny' does", async () => {
    const { Redis } = await import('ioredis');
    const { RedisStore } = await import('@sluice/redis');
    // Nothing listens on port 1: every call fails at once (offline queue off, no start-up wait).
    const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false });
    client.on('error', () => {});
    const store = new RedisStore({ client, failurePolicy: 'deny', readyTimeout: 0, onError: () => {} });
    try {
      const http = limiter({
        name: 'api',
        algorithm: fixedWindow({ limit: 3, window: '10s' }),
        key: byUser,
        store,
      });
      const decision = (await http.evaluate({ user: 'ann' })) as Decision;
      expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable' });
      const headers = new Map<string, string>();
      http.writeHeaders({ user: 'ann' }, decision, headers, (res, name, value) => {
        res.set(name, String(value));
      });
      // r=0 would tell the client its quota is spent, when nothing was counted.
      expect([...headers.keys()]).toEqual([]);
    } finally {
      client.disconnect();
    }
  });
});
