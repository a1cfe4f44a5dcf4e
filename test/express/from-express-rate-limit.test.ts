/**
 * `rateLimit(fromExpressRateLimit(options))` as a drop-in for express-rate-limit 8: the defects a
 * migrating app met only under traffic (issue 32, 1–6), the store contract, and the headers, each
 * checked on a real Express app (and, for the headers, against express-rate-limit itself on the
 * same request).
 */

import {
  type ClientRateLimitInfo,
  type ExpressRateLimitOptions,
  type ExpressRateLimitStore,
  fixedWindow,
  fromExpressRateLimit,
  type LegacyExpressRateLimitStore,
  type ResolvedExpressRateLimitOptions,
  rateLimit,
} from '@sluice/express';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import supertest from 'supertest';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FirstHitMemoryStore } from '../../packages/express/src/erl/memory-store.js';
import { app, statuses } from './erl-app.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 30);

const erl = (options?: ExpressRateLimitOptions) => rateLimit(fromExpressRateLimit(options));

const quiet = () => ({ error: vi.fn(), warn: vi.fn() });

/** A store of the test's own, kept to the contract: a count per key, a window per key. */
class CountingStore implements ExpressRateLimitStore {
  readonly counts = new Map<string, number>();
  readonly calls: string[] = [];
  options: ResolvedExpressRateLimitOptions | undefined;
  init(options: ResolvedExpressRateLimitOptions): void {
    this.options = options;
  }
  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    this.calls.push(`get ${key}`);
    const hits = this.counts.get(key);
    return hits === undefined ? undefined : { totalHits: hits, resetTime: undefined };
  }
  async increment(key: string): Promise<ClientRateLimitInfo> {
    this.calls.push(`increment ${key}`);
    const hits = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, hits);
    return { totalHits: hits, resetTime: new Date(Date.now() + 60_000) };
  }
  async decrement(key: string): Promise<void> {
    this.calls.push(`decrement ${key}`);
    this.counts.set(key, (this.counts.get(key) ?? 1) - 1);
  }
  async resetKey(key: string): Promise<void> {
    this.calls.push(`resetKey ${key}`);
    this.counts.delete(key);
  }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('function options get (req, res) and are awaited (defects 1–3)', () => {
  it('a keyGenerator and a skip reading res.locals limit by it', async () => {
    const setUser: RequestHandler = (req, res, next) => {
      res.locals.user = String(req.query.user);
      next();
    };
    const limiter = erl({
      limit: 2,
      keyGenerator: (_req, res) => res.locals.user as string,
      skip: (_req, res) => res.locals.user === 'admin',
    });
    const served = app(limiter, setUser);
    expect(await statuses(served, '/?user=ann', 3)).toEqual([200, 200, 429]);
    expect(await statuses(served, '/?user=bob', 2)).toEqual([200, 200]);
    expect(await statuses(served, '/?user=admin', 4)).toEqual([200, 200, 200, 200]);
  });

  it('an async keyGenerator, skip and limit are awaited', async () => {
    const served = app(
      erl({
        limit: async (req) => (req.query.plan === 'pro' ? 3 : 1),
        keyGenerator: async (req) => `user:${String(req.query.user)}`,
        skip: async (req) => req.query.user === 'root',
      }),
    );
    expect(await statuses(served, '/?user=a', 2)).toEqual([200, 429]);
    expect(await statuses(served, '/?user=b&plan=pro', 4)).toEqual([200, 200, 200, 429]);
    expect(await statuses(served, '/?user=root', 3)).toEqual([200, 200, 200]);
  });

  it('a keyGenerator answering a number keys by it; one answering undefined shares one key, said once', async () => {
    const logger = quiet();
    const served = app(
      erl({
        limit: 1,
        logger,
        keyGenerator: (req) =>
          (req.query.id === undefined ? (undefined as unknown as string) : Number(req.query.id)) as string,
      }),
    );
    expect(await statuses(served, '/?id=1', 2)).toEqual([200, 429]);
    expect(await statuses(served, '/?id=2', 1)).toEqual([200]);
    expect(await statuses(served, '/', 2)).toEqual([200, 429]);
    expect(logger.warn).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['a value', 'slow down'],
    ['a function', (req: Request) => `slow down, ${String(req.query.user)}`],
    ['an async function', async (_req: Request, res: Response) => `slow down (${res.statusCode})`],
    ['an object', { error: 'slow down' }],
  ])('message as %s is sent with the refusal, never a 500', async (_kind, message) => {
    const served = app(erl({ limit: 1, message }));
    await supertest(served).get('/?user=ann');
    const refused = await supertest(served).get('/?user=ann');
    expect(refused.status).toBe(429);
    const expected = {
      'a value': 'slow down',
      'a function': 'slow down, ann',
      'an async function': 'slow down (429)',
    };
    if (_kind === 'an object') expect(refused.body).toEqual({ error: 'slow down' });
    else expect(refused.text).toBe(expected[_kind as keyof typeof expected]);
  });

  it('a keyGenerator that throws is the app\u2019s error (next(error), a 500), not a refusal', async () => {
    const served = app(
      erl({
        keyGenerator: () => {
          throw new Error('no user');
        },
      }),
    );
    const response = await supertest(served).get('/');
    expect([response.status, response.text]).toEqual([500, 'app error handler: no user']);
  });

  it('a limit function answering no number is the app\u2019s error, not an unlimited request', async () => {
    const served = app(erl({ limit: () => undefined as unknown as number }));
    expect((await supertest(served).get('/')).status).toBe(500);
  });

  it('handler(req, res, next, options) answers refusals; options are the resolved ones', async () => {
    const seen: number[] = [];
    const served = app(
      erl({
        limit: 1,
        statusCode: 420,
        handler: (_req, res, _next, options) => {
          seen.push(options.statusCode, options.windowMs);
          res.status(options.statusCode).json({ refused: true });
        },
      }),
    );
    await supertest(served).get('/');
    const refused = await supertest(served).get('/');
    expect([refused.status, refused.body]).toEqual([420, { refused: true }]);
    expect(seen).toEqual([420, 60_000]);
  });
  it('a handler that calls next() and then throws: the app runs once, the error is logged', async () => {
    const logger = quiet();
    let served = 0;
    const a = express();
    a.use(
      erl({
        limit: 0,
        logger,
        validate: false,
        handler: (_req, _res, next) => {
          next();
          throw new Error('late');
        },
      }),
    );
    a.get('/', (_req, res) => {
      served += 1;
      res.send('ok');
    });
    a.use((_error: Error, _req: Request, res: Response, _next: NextFunction) => {
      served += 100;
      res.sendStatus(500);
    });
    expect((await supertest(a).get('/')).status).toBe(200);
    expect(served).toBe(1);
    expect(logger.error).toHaveBeenCalledWith(new Error('late'), expect.stringContaining('moved on'));
  });
});

describe('a store failure (defect 4)', () => {
  const failing: ExpressRateLimitStore = {
    increment: async () => {
      throw new Error('redis down');
    },
    decrement: async () => {},
    resetKey: async () => {},
  };

  it('goes to next(error): the app answers it (a 500), no 429, no Retry-After', async () => {
    const response = await supertest(app(erl({ store: failing }))).get('/');
    expect([response.status, response.text]).toEqual([500, 'app error handler: redis down']);
    expect(response.headers['retry-after']).toBeUndefined();
  });

  it('with passOnStoreError the request is served and the failure logged', async () => {
    const logger = quiet();
    const response = await supertest(app(erl({ store: failing, passOnStoreError: true, logger }))).get('/');
    expect(response.status).toBe(200);
    expect(logger.error).toHaveBeenCalledTimes(1);
    expect(logger.error.mock.calls[0]?.[0]).toEqual(new Error('redis down'));
  });
});

describe('headers as express-rate-limit sends them (defect 5)', () => {
  /** The rate-limit headers of the 1st and 2nd request to each, through a limit of 1. */
  async function both(options: Parameters<typeof expressRateLimit>[0] & ExpressRateLimitOptions) {
    // `date` is compared by presence only: its value is the second each response was sent, and two
    // requests a second boundary apart differed (a full run failed on 10:59:45 against 10:59:46).
    const pick = (headers: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(headers)
          .filter(([name]) => /ratelimit|retry-after/.test(name) || name === 'date')
          .map(([name, value]) => [name, name === 'date' ? 'present' : value]),
      );
    const run = async (limiter: RequestHandler) => {
      const served = app(limiter);
      const first = await supertest(served).get('/');
      const second = await supertest(served).get('/');
      return [pick(first.headers), pick(second.headers), second.status];
    };
    return {
      theirs: await run(expressRateLimit({ limit: 1, ...options })),
      ours: await run(erl({ limit: 1, ...options })),
    };
  }

  it.each([
    ['the default (legacy only)', {}],
    ['standardHeaders: true, legacy left default (both)', { standardHeaders: true }],
    ['draft-7 and legacy', { standardHeaders: 'draft-7' as const }],
    [
      'draft-8, 2 h, a named key',
      { standardHeaders: 'draft-8' as const, windowMs: 7_200_000, keyGenerator: () => 'foo' },
    ],
    ['draft-8 with an identifier', { standardHeaders: 'draft-8' as const, identifier: 'login' }],
    ['all headers off (no Retry-After either)', { standardHeaders: false, legacyHeaders: false }],
  ])('%s: the same headers and status', async (_name, options) => {
    const { theirs, ours } = await both(options);
    expect(ours).toEqual(theirs);
  });

  it('draft-8 names the quota "5-in-2hrs" and sends a partition key', async () => {
    const response = await supertest(
      app(
        erl({ limit: 5, windowMs: 2 * 60 * 60 * 1000, standardHeaders: 'draft-8', keyGenerator: () => 'k' }),
      ),
    ).get('/');
    expect(response.headers.ratelimit).toBe('"5-in-2hrs"; r=4; t=7200');
    expect(response.headers['ratelimit-policy']).toMatch(/^"5-in-2hrs"; q=5; w=7200; pk=:[A-Za-z0-9+/=]+:$/);
  });
});

describe('start-up accepts what express-rate-limit accepts (defect 6)', () => {
  it('no argument: 5 a minute per address', async () => {
    expect(await statuses(app(rateLimit(fromExpressRateLimit())), '/', 6)).toEqual([
      200, 200, 200, 200, 200, 429,
    ]);
  });

  it('limit: 0 refuses every request (and says so once through the logger)', async () => {
    const logger = quiet();
    expect(await statuses(app(erl({ limit: 0, logger })), '/', 2)).toEqual([429, 429]);
    expect(logger.warn).toHaveBeenCalledTimes(1);
  });

  it('options given as undefined are left out: { store: undefined, limit: undefined } is the default', async () => {
    expect(
      await statuses(app(erl({ store: undefined, limit: undefined, windowMs: undefined })), '/', 6),
    ).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('a statusCode outside 400–599 that Node can send', async () => {
    const served = app(erl({ limit: 1, statusCode: 302 }));
    await supertest(served).get('/');
    expect((await supertest(served).get('/')).status).toBe(302);
  });

  it('an unknown standardHeaders warns and sends no standard headers', async () => {
    const logger = quiet();
    const response = await supertest(app(erl({ standardHeaders: 'draft-9' as 'draft-8', logger }))).get('/');
    expect([response.status, response.headers.ratelimit, response.headers['ratelimit-policy']]).toEqual([
      200,
      undefined,
      undefined,
    ]);
    expect(response.headers['x-ratelimit-limit']).toBe('5');
    expect(logger.warn).toHaveBeenCalledTimes(1);
  });

  it('validate: false, or an object of checks, is accepted', async () => {
    const logger = quiet();
    await supertest(app(erl({ limit: 0, validate: false, logger }))).get('/');
    await supertest(app(erl({ limit: 0, validate: { limit: false, trustProxy: true }, logger }))).get('/');
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('refuses at creation, by name, what it would fail on or ignore under traffic', () => {
    const refused = (options: unknown, code: string, option: string) =>
      expect(() => fromExpressRateLimit(options as ExpressRateLimitOptions)).toThrow(
        expect.objectContaining({ code, option }),
      );
    refused({ onLimitReached: () => {} }, 'ERR_SLUICE_UNSUPPORTED', 'onLimitReached');
    refused({ delayMs: 500 }, 'ERR_SLUICE_UNSUPPORTED', 'delayMs');
    refused({ limt: 5 }, 'ERR_SLUICE_UNKNOWN_OPTION', 'limt');
    refused({ windowMs: 0 }, 'ERR_SLUICE_INVALID_OPTION', 'windowMs');
    refused({ limit: -1 }, 'ERR_SLUICE_INVALID_OPTION', 'limit');
    refused({ statusCode: 1000 }, 'ERR_SLUICE_INVALID_OPTION', 'statusCode');
    refused({ ipv6Subnet: 48.5 }, 'ERR_SLUICE_INVALID_OPTION', 'ipv6Subnet');
    refused({ logger: { error: 'no' } }, 'ERR_SLUICE_INVALID_OPTION', 'logger');
    refused({ store: { increment: () => {} } }, 'ERR_SLUICE_INVALID_OPTION', 'store');
  });
});

describe('the store contract', () => {
  it('init gets the resolved options; the middleware exposes resetKey and getKey', async () => {
    const store = new CountingStore();
    const limiter = erl({ store, max: 2, keyGenerator: () => 'k' });
    expect([store.options?.limit, store.options?.windowMs]).toEqual([2, 60_000]);
    const served = app(limiter);
    expect(await statuses(served, '/', 3)).toEqual([200, 200, 429]);
    expect(await limiter.getKey('k')).toEqual({ totalHits: 3, resetTime: undefined });
    await limiter.resetKey('k');
    expect(await statuses(served, '/', 1)).toEqual([200]);
  });

  it('a legacy callback store (incr) still counts', async () => {
    let hits = 0;
    const legacy: LegacyExpressRateLimitStore = {
      incr: (_key, callback) => callback(undefined, ++hits, undefined),
      decrement: () => {
        hits -= 1;
      },
      resetKey: () => {
        hits = 0;
      },
    };
    expect(await statuses(app(erl({ store: legacy, limit: 1 })), '/', 2)).toEqual([200, 429]);
  });

  it('skipSuccessfulRequests gives successful requests their hit back; failed ones count', async () => {
    const store = new CountingStore();
    const served = app(erl({ store, limit: 2, skipSuccessfulRequests: true, keyGenerator: () => 'k' }));
    expect(await statuses(served, '/', 4)).toEqual([200, 200, 200, 200]);
    expect(await statuses(served, '/fail', 3)).toEqual([400, 400, 429]);
    await vi.waitFor(() => expect(store.counts.get('k')).toBe(3));
  });

  it('skipFailedRequests gives failed requests (and refusals) their hit back', async () => {
    const store = new CountingStore();
    const served = app(erl({ store, limit: 2, skipFailedRequests: true, keyGenerator: () => 'k' }));
    expect(await statuses(served, '/fail', 4)).toEqual([400, 400, 400, 400]);
    expect(await statuses(served, '/', 3)).toEqual([200, 200, 429]);
    await vi.waitFor(() => expect(store.counts.get('k')).toBe(2));
  });

  it('without a store, a client\u2019s window opens at its first hit (express-rate-limit\u2019s MemoryStore)', async () => {
    const served = app(erl({ limit: 2, windowMs: 60_000 }));
    expect(await statuses(served, '/', 3)).toEqual([200, 200, 429]);
    vi.setSystemTime(T0 + 59_999);
    expect(await statuses(served, '/', 1)).toEqual([429]);
    vi.setSystemTime(T0 + 60_000);
    expect(await statuses(served, '/', 3)).toEqual([200, 200, 429]);
  });

  it('req.rateLimit (or requestPropertyName) holds express-rate-limit\u2019s info, which is a sluice Decision', async () => {
    let seen: Record<string, unknown> | undefined;
    const served = express();
    served.use(erl({ limit: 3, requestPropertyName: 'quota', keyGenerator: () => 'k' }));
    served.get('/', (req, res) => {
      seen = (req as unknown as { quota: Record<string, unknown> }).quota;
      res.send('ok');
    });
    await supertest(served).get('/');
    expect(seen).toMatchObject({
      limit: 3,
      used: 1,
      remaining: 2,
      key: 'k',
      allowed: true,
      reason: undefined,
    });
    expect(seen?.resetTime).toEqual(new Date(T0 + 60_000));
    expect(seen?.current).toBe(1);
  });
});

describe("sluice's own rateLimit when a key function throws", () => {
  // A throwing key is the app's bug, not rate limiting: never a 429. By default the request is
  // served and the error reported (onError); with storeFailure: 'deny' it is a 503.
  const throwing = () => {
    throw new Error('bad key');
  };
  it.each([
    ['allow', 200],
    ['deny', 503],
  ] as const)('storeFailure %s: %i, and onError hears it', async (storeFailure, status) => {
    const errors: unknown[] = [];
    const limiter = rateLimit({
      name: 'k',
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      key: throwing,
      storeFailure,
      onError: (error) => errors.push(error),
    });
    expect(await statuses(app(limiter), '/', 2)).toEqual([status, status]);
    expect(errors).toHaveLength(2);
  });
});

describe("fromExpressRateLimit's default store", () => {
  it('holds at most maxKeys clients under a flood of new keys (memory bounded under any traffic): the oldest windows go first', async () => {
    const store = new FirstHitMemoryStore(3);
    store.init({ windowMs: 60_000 } as never);
    try {
      for (const key of ['a', 'b', 'c', 'd', 'e']) await store.increment(key);
      expect(store.size).toBe(3);
      // The two oldest were forgotten (a fresh window if they come back); the newest still count.
      expect(await store.get('a')).toBeUndefined();
      expect(await store.get('b')).toBeUndefined();
      expect((await store.get('e'))?.totalHits).toBe(1);
      expect((await store.increment('c')).totalHits).toBe(2);
    } finally {
      store.shutdown();
    }
  });
});
