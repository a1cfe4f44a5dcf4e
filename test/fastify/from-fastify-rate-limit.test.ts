/**
 * fromFastifyRateLimit: @fastify/rate-limit 11's options, with its behaviour, on sluice. Written
 * from the behaviour @fastify/rate-limit documents and answers with (its windows open at a key's
 * first request, its headers, its refusal thrown to the app's error handler), on real Fastify
 * apps with `inject`, the clock moved by hand (`Date` faked: the layer's memory store reads
 * `Date.now()` at each call). Issue 32 §8: a NaN `max` or `timeWindow` falls back to the defaults
 * as there, where it threw.
 */

import { MemoryStore } from '@sluice/core';
import {
  type FastifyRateLimitOptions,
  fromFastifyRateLimit,
  normalizeFastifyRateLimitIP,
} from '@sluice/fastify';
import Fastify, { type FastifyInstance, type FastifyRequest, type LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0, 500); // half a second past an epoch second: windows are not aligned to it

let app: FastifyInstance | undefined;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: T0 });
});
afterEach(async () => {
  vi.useRealTimers();
  await app?.close();
  app = undefined;
});

const at = (ms: number) => vi.setSystemTime(T0 + ms);

async function build(
  options: FastifyRateLimitOptions,
  routes?: (app: FastifyInstance) => void,
): Promise<FastifyInstance> {
  app = Fastify({ exposeHeadRoutes: true });
  await app.register(fromFastifyRateLimit, options);
  if (routes === undefined) app.get('/', async () => 'ok');
  else routes(app);
  return app;
}

async function get(url = '/', headers: Record<string, string> = {}, method: 'GET' | 'HEAD' | 'POST' = 'GET') {
  return app!.inject({ url, headers, method });
}

async function codes(count: number, url = '/', headers: Record<string, string> = {}): Promise<number[]> {
  const answers: number[] = [];
  for (let i = 0; i < count; i++) answers.push((await get(url, headers)).statusCode);
  return answers;
}

const quota = (res: LightMyRequestResponse) => [
  res.statusCode,
  res.headers['x-ratelimit-limit'],
  res.headers['x-ratelimit-remaining'],
  res.headers['x-ratelimit-reset'],
  res.headers['retry-after'],
];

describe('fromFastifyRateLimit: max and timeWindow', () => {
  it("admits max a window, the window opening at the key's first request; refuses with the peer's headers and body", async () => {
    await build({ max: 2, timeWindow: 1000 });
    expect(quota(await get())).toEqual([200, '2', '1', '1', undefined]);
    at(300);
    expect(quota(await get())).toEqual([200, '2', '0', '1', undefined]);
    const refused = await get();
    expect(quota(refused)).toEqual([429, '2', '0', '1', '1']);
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.json()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'Rate limit exceeded, retry in 1 second',
    });
    // The window is the key's: it ends 1000 ms after its first request (not at an epoch second).
    at(999);
    expect((await get()).statusCode).toBe(429);
    at(1000);
    expect(quota(await get())).toEqual([200, '2', '1', '1', undefined]);
  });

  it("reads timeWindow strings in @lukeed/ms's words, and says the retry in words", async () => {
    await build({ max: 1, timeWindow: '1 minute' });
    await get();
    const refused = await get();
    expect(quota(refused)).toEqual([429, '1', '0', '60', '60']);
    expect(refused.json().message).toBe('Rate limit exceeded, retry in 1 minute');
    at(60_000);
    expect((await get()).statusCode).toBe(200);
  });

  it('refuses an unreadable timeWindow string at registration, by name (the peer fails every request)', async () => {
    app = Fastify();
    await expect(app.register(fromFastifyRateLimit, { timeWindow: 'one minute' })).rejects.toMatchObject({
      name: 'SluiceError',
      code: 'ERR_SLUICE_INVALID_DURATION',
      option: 'timeWindow',
    });
  });

  it('regression (issue 32 §8): a NaN max falls back to 1000 and a NaN timeWindow to a minute, as the peer does', async () => {
    await build({ max: Number.NaN, timeWindow: Number.NaN });
    expect(quota(await get())).toEqual([200, '1000', '999', '60', undefined]);
  });

  it('regression (issue 32 §8): in a route config too, and a negative one as well', async () => {
    await build({ global: false }, (app) => {
      app.get('/', { config: { rateLimit: { max: Number.NaN, timeWindow: -5 } as never } }, async () => 'ok');
    });
    expect(quota(await get())).toEqual([200, '1000', '999', '60', undefined]);
  });

  it('max: 0 is refused at registration by name (the peer refuses every request); a function answering 0 fails the request', async () => {
    app = Fastify();
    await expect(app.register(fromFastifyRateLimit, { max: 0 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_UNSUPPORTED',
      option: 'max',
    });
    await build({ max: () => 0 });
    expect((await get()).statusCode).toBe(500);
  });

  it('takes max and timeWindow as functions of (request, key), async ones awaited, on every request', async () => {
    const asked: string[] = [];
    await build({
      keyGenerator: (request) => String(request.headers['x-api-key']),
      max: async (_request: FastifyRequest, key: string) => {
        asked.push(key);
        return key === 'pro' ? 3 : 1;
      },
      timeWindow: (_request: FastifyRequest, key: string) => (key === 'pro' ? 2000 : 1000),
    });
    expect(await codes(4, '/', { 'x-api-key': 'pro' })).toEqual([200, 200, 200, 429]);
    expect(await codes(2, '/', { 'x-api-key': 'free' })).toEqual([200, 429]);
    expect(asked.filter((key) => key === 'pro').length).toBeGreaterThanOrEqual(4);
    at(1000);
    expect(await codes(1, '/', { 'x-api-key': 'free' })).toEqual([200]);
    expect(await codes(1, '/', { 'x-api-key': 'pro' })).toEqual([429]);
  });
});

describe('fromFastifyRateLimit: keys and allowList', () => {
  it('keyGenerator (sync, async, a number) keys the counter; allowList gets the key as answered', async () => {
    const seen: unknown[] = [];
    await build({
      max: 1,
      keyGenerator: async (request) => (request.headers['x-user'] === 'a' ? 1 : 2),
      allowList: (_request, key) => {
        seen.push(key);
        return false;
      },
    });
    expect(await codes(2, '/', { 'x-user': 'a' })).toEqual([200, 429]);
    expect(await codes(1, '/', { 'x-user': 'b' })).toEqual([200]);
    expect(seen).toEqual([1, 1, 2]);
  });

  it('an allow-listed key is not limited and gets no headers (array and async function)', async () => {
    await build({ max: 1, allowList: ['127.0.0.1'] });
    const answers = [await get(), await get()];
    expect(answers.map((res) => [res.statusCode, res.headers['x-ratelimit-limit']])).toEqual([
      [200, undefined],
      [200, undefined],
    ]);
    await app!.close();
    await build({ max: 1, allowList: async (request) => request.headers['x-internal'] === '1' });
    expect(await codes(3, '/', { 'x-internal': '1' })).toEqual([200, 200, 200]);
    expect(await codes(2)).toEqual([200, 429]);
  });

  it('the default key is the address, IPv6 by its /64 (or ipv6Subnet), IPv4-mapped as IPv4', async () => {
    expect(normalizeFastifyRateLimitIP('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(normalizeFastifyRateLimitIP('2001:0DB8:ABCD:0012:0000:0000:0000:0001')).toBe('2001:db8:abcd:12::');
    expect(normalizeFastifyRateLimitIP('2001:db8:abcd:12::1', 48)).toBe('2001:db8:abcd::');
    app = Fastify({ trustProxy: true });
    await app.register(fromFastifyRateLimit, { max: 1 });
    app.get('/', async () => 'ok');
    const from = async (ip: string) =>
      (await app!.inject({ url: '/', headers: { 'x-forwarded-for': ip } })).statusCode;
    expect([
      await from('2001:db8:abcd:12::1'),
      await from('2001:db8:abcd:12::2'),
      await from('2001:db8:abcd:13::1'),
    ]).toEqual([200, 429, 200]);
  });
});

describe('fromFastifyRateLimit: routes', () => {
  it("a route's config.rateLimit replaces the plugin's limit there and counts on its own, per route", async () => {
    await build({ max: 1 }, (app) => {
      app.get('/', async () => 'ok');
      app.get('/other', async () => 'ok');
      app.post('/login', { config: { rateLimit: { max: 2 } as never } }, async () => 'ok');
      app.post('/reset', { config: { rateLimit: { max: 2 } as never } }, async () => 'ok');
      app.get('/free', { config: { rateLimit: false } }, async () => 'ok');
    });
    const post = async (url: string) => (await get(url, {}, 'POST')).statusCode;
    expect([
      await post('/login'),
      await post('/login'),
      await post('/reset'),
      await post('/reset'),
      await post('/login'),
    ]).toEqual([200, 200, 200, 200, 429]);
    // The plugin's limit is one counter across the routes it covers.
    expect([(await get('/')).statusCode, (await get('/other')).statusCode]).toEqual([200, 429]);
    expect(await codes(3, '/free')).toEqual([200, 200, 200]);
  });

  it('routes with the same groupId share one counter; a GET and its automatic HEAD count apart', async () => {
    await build({ global: false }, (app) => {
      app.get('/a', { config: { rateLimit: { max: 2, groupId: 'g' } as never } }, async () => 'ok');
      app.get('/b', { config: { rateLimit: { max: 2, groupId: 'g' } as never } }, async () => 'ok');
      app.get('/doc', { config: { rateLimit: { max: 1 } as never } }, async () => 'ok');
    });
    expect([
      (await get('/a')).statusCode,
      (await get('/b')).statusCode,
      (await get('/a')).statusCode,
    ]).toEqual([200, 200, 429]);
    expect([
      (await get('/doc')).statusCode,
      (await get('/doc')).statusCode,
      (await get('/doc', {}, 'HEAD')).statusCode,
      (await get('/doc', {}, 'HEAD')).statusCode,
    ]).toEqual([200, 429, 200, 429]);
  });

  it('a groupId that is not a string is refused when the route is registered', async () => {
    await build({}, () => {});
    expect(() =>
      app!.get('/x', { config: { rateLimit: { groupId: 123 } as never } }, async () => 'ok'),
    ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'groupId' }));
    expect(() => app!.get('/y', { config: { rateLimit: (() => {}) as never } }, async () => 'ok')).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'config.rateLimit' }),
    );
  });

  it('global: false limits only the routes with a config.rateLimit', async () => {
    await build({ global: false, max: 1 }, (app) => {
      app.get('/', async () => 'ok');
      app.get('/limited', { config: { rateLimit: {} as never } }, async () => 'ok');
    });
    expect(await codes(3)).toEqual([200, 200, 200]);
    expect(await codes(2, '/limited')).toEqual([200, 429]);
  });

  it("hook: the limit runs after the route's own hooks of its stage; preHandler after validation", async () => {
    const order: string[] = [];
    await build({ max: 1, hook: 'preHandler' }, (app) => {
      app.get(
        '/',
        {
          onRequest: (_request, _reply, done) => {
            order.push('onRequest');
            done();
          },
          preHandler: (_request, _reply, done) => {
            order.push('preHandler');
            done();
          },
        },
        async () => {
          order.push('handler');
          return 'ok';
        },
      );
    });
    await get();
    const refused = await get();
    expect(refused.statusCode).toBe(429);
    expect(order).toEqual(['onRequest', 'preHandler', 'handler', 'onRequest', 'preHandler']);
  });

  it('refuses a hook it cannot run in, by name', async () => {
    app = Fastify();
    await expect(app.register(fromFastifyRateLimit, { hook: 'preParsing' as never })).rejects.toMatchObject({
      code: 'ERR_SLUICE_UNSUPPORTED',
      option: 'hook',
    });
  });
});

describe('fromFastifyRateLimit: refusals', () => {
  it("errorResponseBuilder's value is thrown to the app's error handler, the reply's status left as it was", async () => {
    const handled: unknown[] = [];
    app = Fastify();
    app.setErrorHandler((error, _request, reply) => {
      handled.push([reply.statusCode, error]);
      reply.code(418).send({ mine: true });
    });
    await app.register(fromFastifyRateLimit, {
      max: 1,
      errorResponseBuilder: (_request, context) => ({
        statusCode: context.statusCode,
        after: context.after,
        max: context.max,
      }),
    });
    app.get('/', async () => 'ok');
    await get();
    const refused = await get();
    expect([refused.statusCode, refused.json()]).toEqual([418, { mine: true }]);
    expect(handled).toEqual([[200, { statusCode: 429, after: '1 minute', max: 1 }]]);
    expect(refused.headers['x-ratelimit-limit']).toBe('1');
  });

  it('onExceeding hears each admitted request and onExceeded each refused one, with the key', async () => {
    const heard: string[] = [];
    await build({
      max: 1,
      keyGenerator: () => 'k',
      onExceeding: (_request, key) => heard.push(`exceeding ${key}`),
      onExceeded: (_request, key) => heard.push(`exceeded ${key}`),
    });
    await codes(2);
    expect(heard).toEqual(['exceeding k', 'exceeded k']);
  });

  it('ban: past ban refusals in a window, 403 and onBanReach', async () => {
    const banned: string[] = [];
    await build({ max: 1, ban: 1, keyGenerator: () => 'k', onBanReach: (_request, key) => banned.push(key) });
    expect(await codes(4)).toEqual([200, 429, 403, 403]);
    expect(banned).toEqual(['k', 'k']);
    expect((await get()).json().statusCode).toBe(403);
  });

  it('continueExceeding: each refusal restarts the window', async () => {
    await build({ max: 1, timeWindow: 1000, continueExceeding: true });
    await get();
    at(900);
    expect((await get()).statusCode).toBe(429);
    at(1500);
    expect((await get()).statusCode).toBe(429); // 600 ms after the last refusal
    at(2500);
    expect((await get()).statusCode).toBe(200);
  });

  it('exponentialBackoff: a refusal blocks the key a window; refused again within a window of its end, twice as long', async () => {
    await build({ max: 1, timeWindow: 1000, exponentialBackoff: true });
    await get();
    expect((await get()).headers['retry-after']).toBe('1');
    at(999);
    expect((await get()).statusCode).toBe(429); // blocked, not counted: the block is not extended
    at(1500);
    expect((await get()).statusCode).toBe(200);
    const again = await get();
    expect([again.statusCode, again.headers['retry-after']]).toEqual([429, '2']);
    at(3499);
    expect((await get()).statusCode).toBe(429);
    at(3500);
    expect((await get()).statusCode).toBe(200);
    // A window after its last block ended, the streak is forgotten: a refusal blocks one window again.
    at(6000);
    await get();
    expect((await get()).headers['retry-after']).toBe('1');
  });

  it('addHeaders and addHeadersOnExceeding switch headers off by name; enableDraftSpec renames them', async () => {
    await build({
      max: 1,
      addHeadersOnExceeding: { 'x-ratelimit-reset': false },
      addHeaders: { 'retry-after': false, 'x-ratelimit-limit': false },
    });
    expect(quota(await get())).toEqual([200, '1', '0', undefined, undefined]);
    expect(quota(await get())).toEqual([429, undefined, '0', '60', undefined]);
    await app!.close();
    await build({ max: 1, enableDraftSpec: true });
    const first = await get();
    expect([
      first.headers['ratelimit-limit'],
      first.headers['ratelimit-remaining'],
      first.headers['x-ratelimit-limit'],
    ]).toEqual(['1', '0', undefined]);
    const refused = await get();
    expect([refused.headers['ratelimit-reset'], refused.headers['retry-after']]).toEqual(['60', '60']);
  });

  it('skipOnError: a failing store lets the request through uncounted, or fails it with its error (500)', async () => {
    class DownStore {
      incr(_key: string, callback: (error: Error | null) => void) {
        callback(new Error('store down'));
      }
      child() {
        return new DownStore();
      }
    }
    await build({ max: 1, store: DownStore as never, skipOnError: true });
    const through = await get();
    expect(quota(through)).toEqual([200, '1', '1', '0', undefined]);
    expect(await codes(2)).toEqual([200, 200]);
    await app!.close();
    await build({ max: 1, store: DownStore as never });
    const failed = await get();
    expect([failed.statusCode, failed.json().message]).toEqual([500, 'store down']);
  });

  it('a key generator that throws fails the request with its error, skipOnError or not (it covers the store)', async () => {
    const failing = () => {
      throw new Error('no session');
    };
    for (const skipOnError of [true, false]) {
      await build({ max: 1, keyGenerator: failing, skipOnError });
      const failed = await get();
      expect([failed.statusCode, failed.json().message]).toEqual([500, 'no session']);
      await app!.close();
    }
  });
});

describe('fromFastifyRateLimit: decorators and stores', () => {
  it('app.createRateLimit(): the check answers as the peer; increment: false reads without counting', async () => {
    await build({ global: false, max: 2, timeWindow: 1000 }, (app) => {
      const check = app.createRateLimit();
      app.get('/peek', async (request) => check(request, { increment: false }));
      app.get('/take', async (request) => check(request));
    });
    expect((await get('/peek')).json()).toEqual({
      isAllowed: false,
      key: '127.0.0.1',
      max: 2,
      timeWindow: 1000,
      remaining: 2,
      ttl: 0,
      ttlInSeconds: 0,
      isExceeded: false,
      isBanned: false,
    });
    await get('/take');
    at(400);
    expect((await get('/take')).json()).toMatchObject({ remaining: 0, ttl: 600, isExceeded: false });
    expect((await get('/take')).json()).toMatchObject({
      remaining: 0,
      ttl: 600,
      ttlInSeconds: 1,
      isExceeded: true,
    });
    // Read, not counted: still past its max, and the window not moved.
    expect((await get('/peek')).json()).toMatchObject({ remaining: 0, ttl: 600, isExceeded: true });
    at(1000);
    expect((await get('/take')).json()).toMatchObject({ remaining: 1, isExceeded: false });
  });

  it('app.rateLimit(options) is a hook with its own counter', async () => {
    await build({ global: false }, (app) => {
      app.get('/', { onRequest: app.rateLimit({ max: 1 } as never) }, async () => 'ok');
    });
    expect(await codes(2)).toEqual([200, 429]);
  });

  it('store: an @fastify/rate-limit store class counts as it always did, built with the options and a child per route', async () => {
    const built: Record<string, unknown>[] = [];
    class CountingStore {
      current = 0;
      constructor(readonly options: Record<string, unknown>) {
        built.push(options);
      }
      incr(_key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void) {
        this.current++;
        callback(null, { current: this.current, ttl: 10_000 - this.current * 1000 });
      }
      child(options: Record<string, unknown>) {
        return new CountingStore(options);
      }
    }
    await build({ max: 2, timeWindow: 10_000, store: CountingStore as never }, (app) => {
      app.get('/', async () => 'ok');
      app.get('/route', { config: { rateLimit: { max: 1 } as never } }, async () => 'ok');
    });
    expect([quota(await get()), quota(await get()), quota(await get())]).toEqual([
      [200, '2', '1', '9', undefined],
      [200, '2', '0', '8', undefined],
      [429, '2', '0', '7', '7'],
    ]);
    expect(await codes(2, '/route')).toEqual([200, 429]);
    // The plugin's store, then a child for /route and one for its automatic HEAD route.
    expect(built.map((options) => [options.max, options.timeWindow])).toEqual([
      [2, 10_000],
      [1, 10_000],
      [1, 10_000],
    ]);
  });

  it('store: a sluice store is used as given; anything else, and an unknown option, is refused by name', async () => {
    const store = new MemoryStore({ clock: () => Date.now() });
    await build({ max: 1, store });
    await get();
    await app!.close();
    await build({ max: 1, store }); // the same store: the count carried over
    expect((await get()).statusCode).toBe(429);
    app = Fastify();
    await expect(app.register(fromFastifyRateLimit, { store: {} as never })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      option: 'store',
    });
    app = Fastify();
    await expect(app.register(fromFastifyRateLimit, { maxx: 1 } as never)).rejects.toMatchObject({
      code: 'ERR_SLUICE_UNKNOWN_OPTION',
      option: 'maxx',
    });
  });
});

describe('fromFastifyRateLimit: redis', () => {
  it('redis (an ioredis client): the counters live in Redis under nameSpace; a failure is answered per skipOnError', async () => {
    vi.useRealTimers(); // Redis expires keys in real time
    const redis = new Redis({ host: '127.0.0.1', port: inject('redisPort') });
    const nameSpace = `test:frl:${process.pid}:${Date.now()}:`;
    try {
      await build({ max: 2, timeWindow: 60_000, redis, nameSpace }, (app) => {
        app.get('/', async () => 'ok');
        app.get('/lenient', { config: { rateLimit: { skipOnError: true } as never } }, async () => 'ok');
      });
      expect((await codes(3)).join()).toBe('200,200,429');
      expect((await redis.keys(`${nameSpace}*`)).length).toBeGreaterThan(0);
      await redis.quit();
      const failed = await get();
      expect(failed.statusCode).toBe(500);
      const through = await get('/lenient');
      expect(quota(through)).toEqual([200, '2', '2', '0', undefined]);
    } finally {
      if (redis.status !== 'end') redis.disconnect();
    }
  });
});
