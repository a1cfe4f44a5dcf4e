import { createHash } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import type { LimitCall } from '@sluice/core';
import {
  byIp,
  byRoute,
  byToken,
  compose,
  type Decision,
  fixedWindow,
  leakyBucketQueue,
  type SluiceWarning,
  type Store,
  tokenBucket,
} from '@sluice/core';
import { bindName } from '@sluice/core/adapter';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QUOTA_EXCEEDED, TEMPORARY_REDUCED_CAPACITY } from '../../packages/core/src/http/problem.js';
import { forgetWarnings } from '../setup/process-warnings.js';
import { featuresSuite } from './features-suite.js';
import { guardSuite } from './guard-suite.js';
import {
  type AppSpec,
  type Options,
  Probe,
  type StoreFactory,
  type Subject,
  type SuiteFixture,
  type TestApp,
} from './harness.js';

/**
 * What a test waits for (a refund, a connection closed, a stalled store reached): a bound that
 * only turns a hang into a failure on a loaded 2-core machine, checked every 5 ms (vi.waitFor's
 * 50 ms made most of these tests' time: each waits three times).
 */
const WAIT = { timeout: 10_000, interval: 5 };

/** A store that fails every call, synchronously or by rejecting: the failure-policy tests. */
function failingStore(mode: 'throw' | 'reject'): Store {
  const fail = () => {
    if (mode === 'throw') throw new Error('store down');
    return Promise.reject(new Error('store down'));
  };
  return { consume: fail, peek: fail, reset: fail, shutdown: () => undefined };
}

/** Wraps a store to record the keys it is asked about (to check what reaches the store). */
function recording(store: Store, keys: string[]): Store {
  return {
    consume: (calls: readonly LimitCall[], now) => {
      for (const call of calls) keys.push(`${call.algorithm.fingerprint} ${call.key}`);
      return store.consume(calls, now);
    },
    peek: (calls, now) => store.peek(calls, now),
    reset: (calls) => store.reset(calls),
    shutdown: () => store.shutdown(),
  };
}

/**
 * Wraps a store so its `consume` calls wait for `answer()`: a store slow to answer (a stalled
 * Redis) with no timer. Counts the calls waiting and the refunds completed.
 */
function stalling(store: Store) {
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const seen = { waiting: 0, refunded: 0 };
  const stalled: Store = {
    consume: async (calls, now) => {
      seen.waiting++;
      await answered;
      return store.consume(calls, now);
    },
    peek: (calls, now) => store.peek(calls, now),
    reset: (calls) => store.reset(calls),
    refund: async (calls, now) => {
      await store.refund!(calls, now);
      seen.refunded++;
    },
    shutdown: () => store.shutdown(),
  };
  return { store: stalled, seen, answer };
}

/** GET on its own connection, never answered: the test destroys it. */
function leavingRequest(url: string) {
  const request = httpRequest(url, { agent: false });
  request.on('error', () => undefined);
  request.end();
  return request;
}

/**
 * One behaviour suite for every adapter and store: exact statuses and header values over request
 * sequences, with the store on a fake clock (no sleeping).
 */
export function adapterSuite(
  subject: Subject,
  makeStore: StoreFactory,
  /** `false` for a store without blocks and shadow mode (ServerStore refuses them, coded). */
  blocksAndShadow = true,
): void {
  describe(subject.name, () => {
    let now: number;
    let store: Store;
    let app: TestApp | undefined;
    const clock = () => now;

    beforeEach(async () => {
      now = 0;
      store = await makeStore(clock);
    });
    afterEach(async () => {
      await app?.close();
      app = undefined;
      await store.shutdown();
    });

    const build = async (spec: AppSpec) => {
      app = await subject.build(spec);
      return app;
    };
    // What the suites nested in this one (issue 14's) share of it: the app, the store, the clock.
    const fixture: SuiteFixture = {
      build,
      app: () => app!,
      store: () => store,
      setNow: (ms) => {
        now = ms;
      },
    };
    const get = (path: string, headers?: Record<string, string>) => app!.request('GET', path, headers);
    const window = (limit: number, ms: number | `${number}s` = '10s') => fixedWindow({ limit, window: ms });

    it('counts down, refuses with 429, Retry-After and a problem body, and recovers with the window', async () => {
      await build({
        options: { name: 'burst', algorithm: window(3), store },
        routes: [{ method: 'GET', path: '/' }],
      });
      const remaining: string[] = [];
      for (let i = 0; i < 3; i++) {
        const reply = await get('/');
        expect(reply.status).toBe(200);
        expect(reply.headers['ratelimit-policy']).toBe('"burst";q=3;w=10');
        remaining.push(reply.headers.ratelimit!);
      }
      expect(remaining).toEqual(['"burst";r=2;t=10', '"burst";r=1;t=10', '"burst";r=0;t=10']);
      const refused = await get('/');
      expect(refused.status).toBe(429);
      expect(refused.headers.ratelimit).toBe('"burst";r=0;t=10');
      expect(refused.headers['retry-after']).toBe('10');
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body).toEqual({
        type: QUOTA_EXCEEDED,
        title: 'Request cannot be satisfied as assigned quota has been exceeded',
        status: 429,
        detail: 'Too many requests for "burst". Retry in 10 s.',
        'violated-policies': ['burst'],
      });
      now = 4_500;
      const later = await get('/');
      expect([later.status, later.headers.ratelimit, later.headers['retry-after']]).toEqual([
        429,
        '"burst";r=0;t=6',
        '6',
      ]);
      now = 10_000;
      const fresh = await get('/');
      expect([fresh.status, fresh.headers.ratelimit]).toEqual([200, '"burst";r=2;t=10']);
    });

    it("a refusing limit's reset is when it can be retried, and Retry-After names the same instant (token bucket)", async () => {
      const algorithm = tokenBucket({ capacity: 2, refillInterval: '2s' });
      await build({ options: { name: 'tb', algorithm, store }, routes: [{ method: 'GET', path: '/' }] });
      expect((await get('/')).headers.ratelimit).toBe('"tb";r=1;t=1');
      expect((await get('/')).headers.ratelimit).toBe('"tb";r=0;t=2');
      const refused = await get('/');
      // The next token is 1 s away, the bucket is full in 2 s: the client is told 1 s, in both headers.
      expect([refused.status, refused.headers.ratelimit, refused.headers['retry-after']]).toEqual([
        429,
        '"tb";r=0;t=1',
        '1',
      ]);
      expect(refused.headers['ratelimit-policy']).toBe('"tb";q=2;w=2');
      expect(refused.body).toMatchObject({ detail: 'Too many requests for "tb". Retry in 1 s.' });
      now = 999;
      expect((await get('/')).status).toBe(429);
      now = 1_000;
      expect((await get('/')).status).toBe(200);
    });

    it.each([
      ['draft-7', { ratelimit: 'limit=2, remaining=0, reset=1' }],
      ['draft-6', { 'ratelimit-reset': '1', 'ratelimit-remaining': '0' }],
      ['legacy', { 'x-ratelimit-reset': '1', 'x-ratelimit-remaining': '0' }],
    ] as const)('%s: the refused reset equals Retry-After (token bucket)', async (headers, expected) => {
      const algorithm = tokenBucket({ capacity: 2, refillInterval: '2s' });
      await build({
        options: { name: 'tb', algorithm, headers, store },
        routes: [{ method: 'GET', path: '/' }],
      });
      await get('/');
      await get('/');
      const refused = await get('/');
      const pick = Object.fromEntries(Object.keys(expected).map((name) => [name, refused.headers[name]]));
      expect([refused.status, refused.headers['retry-after'], pick]).toEqual([429, '1', expected]);
    });

    it('layered: the refusing limit reports its retry time, the admitting one its reset', async () => {
      const options: Options = {
        limits: [
          { name: 'tb', algorithm: tokenBucket({ capacity: 2, refillInterval: '4s' }) },
          { name: 'daily', algorithm: fixedWindow({ limit: 100, window: '1d' }) },
        ],
        store,
      };
      await build({ options, routes: [{ method: 'GET', path: '/' }] });
      await get('/');
      expect((await get('/')).headers.ratelimit).toBe('"tb";r=0;t=4, "daily";r=98;t=86400');
      now = 500;
      const refused = await get('/');
      expect([refused.status, refused.headers.ratelimit, refused.headers['retry-after']]).toEqual([
        429,
        '"tb";r=0;t=2, "daily";r=98;t=86400',
        '2',
      ]);
    });

    it.each([
      [
        'draft-7',
        { 'ratelimit-policy': '2;w=10', ratelimit: 'limit=2, remaining=1, reset=10' },
        { ratelimit: 'limit=2, remaining=0, reset=10' },
      ],
      [
        'draft-6',
        {
          'ratelimit-policy': '2;w=10',
          'ratelimit-limit': '2',
          'ratelimit-remaining': '1',
          'ratelimit-reset': '10',
          ratelimit: undefined,
        },
        { 'ratelimit-remaining': '0', 'ratelimit-reset': '10' },
      ],
      [
        'legacy',
        {
          'x-ratelimit-limit': '2',
          'x-ratelimit-remaining': '1',
          'x-ratelimit-reset': '10',
          ratelimit: undefined,
          'ratelimit-policy': undefined,
        },
        { 'x-ratelimit-remaining': '0' },
      ],
      [false, { ratelimit: undefined, 'ratelimit-policy': undefined, 'x-ratelimit-limit': undefined }, {}],
    ] as const)('header format %s', async (headers, first, refusedHeaders) => {
      await build({
        options: { name: 'w', algorithm: window(2), headers, store },
        routes: [{ method: 'GET', path: '/' }],
      });
      // Picks the named headers, so that an absent header must be absent (undefined).
      const pick = (reply: { headers: Record<string, string | undefined> }, names: object) =>
        Object.fromEntries(Object.keys(names).map((name) => [name, reply.headers[name]]));
      const allowed = await get('/');
      expect(pick(allowed, first)).toEqual(first);
      await get('/');
      const refused = await get('/');
      expect(refused.status).toBe(429);
      const expected = { ...refusedHeaders, 'retry-after': '10' };
      expect(pick(refused, expected)).toEqual(expected);
    });

    it('layered limits: one list member per limit, all-or-nothing, a limit without key is skipped', async () => {
      const options: Options = {
        limits: [
          { name: 'burst', key: byIp(), algorithm: window(2) },
          { name: 'daily', key: byToken(), algorithm: fixedWindow({ limit: 3, window: '1d' }) },
        ],
        store,
      };
      await build({ options, routes: [{ method: 'GET', path: '/' }] });
      const token = { authorization: 'Bearer s3cret' };
      const first = await get('/', token);
      expect(first.headers['ratelimit-policy']).toBe('"burst";q=2;w=10, "daily";q=3;w=86400');
      expect(first.headers.ratelimit).toBe('"burst";r=1;t=10, "daily";r=2;t=86400');
      expect((await get('/', token)).headers.ratelimit).toBe('"burst";r=0;t=10, "daily";r=1;t=86400');
      const refused = await get('/', token);
      expect(refused.status).toBe(429);
      // The daily limit was not consumed by the refused request.
      expect(refused.headers.ratelimit).toBe('"burst";r=0;t=10, "daily";r=1;t=86400');
      expect(refused.headers['retry-after']).toBe('10');
      expect(refused.body).toMatchObject({ 'violated-policies': ['burst'] });
      // Anonymous: only the per-IP limit applies and is reported.
      const anonymous = await get('/');
      expect([anonymous.status, anonymous.headers.ratelimit, anonymous.headers['ratelimit-policy']]).toEqual([
        429,
        '"burst";r=0;t=10',
        '"burst";q=2;w=10',
      ]);
      now = 10_000;
      expect((await get('/', token)).headers.ratelimit).toBe('"burst";r=1;t=10, "daily";r=0;t=86390');
      const daily = await get('/', token);
      expect([daily.status, daily.headers['retry-after']]).toEqual([429, '86390']);
      expect(daily.body).toMatchObject({ 'violated-policies': ['daily'] });
      // The daily refusal consumed nothing from the burst limit.
      expect((await get('/')).headers.ratelimit).toBe('"burst";r=0;t=10');
    });

    it('byToken hashes the secret before it reaches the store', async () => {
      const keys: string[] = [];
      const options: Options = {
        name: 'api',
        key: byToken(),
        algorithm: window(5),
        store: recording(store, keys),
      };
      await build({ options, routes: [{ method: 'GET', path: '/' }] });
      await get('/', { authorization: 'Bearer s3cret' });
      await get('/', { authorization: 'Basic s3cret' });
      const hash = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 22);
      // The limit's name is bound into the fingerprint, not the key (so a user key's limits
      // share a Redis Cluster slot). Another scheme is no bearer token: it is limited by a hash
      // of the whole header, apart from tokens.
      const fingerprint = bindName(window(5), 'api').fingerprint;
      expect(keys).toEqual([
        `${fingerprint} token:${hash('s3cret')}`,
        `${fingerprint} credential:${hash('Basic s3cret')}`,
      ]);
    });

    it('regression: byToken counts Bearer<TAB>token and extra spaces as the token; an unreadable credential is limited, never skipped (issue 11, 3.8)', async () => {
      const limit: Options = { name: 'api', key: byToken(), algorithm: window(4), store };
      await build({ routes: [{ method: 'GET', path: '/', limit }] });
      // RFC 9110 §11.4: auth-scheme (any case) 1*SP token68. A tab, as lenient servers accept it,
      // or several spaces: the same token, the same quota (the tab skipped the limit).
      expect((await get('/', { authorization: 'Bearer abc' })).headers.ratelimit).toBe('"api";r=3;t=10');
      expect((await get('/', { authorization: 'Bearer\tabc' })).headers.ratelimit).toBe('"api";r=2;t=10');
      expect((await get('/', { authorization: 'bearer   abc' })).headers.ratelimit).toBe('"api";r=1;t=10');
      expect((await get('/', { authorization: 'BEARER \t abc' })).headers.ratelimit).toBe('"api";r=0;t=10');
      expect((await get('/', { authorization: 'Bearer\tabc' })).status).toBe(429);
      // Unreadable as `Bearer <token>`: limited by the whole header, each value on its own quota.
      for (const odd of ['Bearerabc', 'Bearer', 'Basic abc']) {
        const replies = [];
        for (let i = 0; i < 5; i++) replies.push((await get('/', { authorization: odd })).status);
        expect(replies, odd).toEqual([200, 200, 200, 200, 429]);
      }
      // An empty header carries no credential: the limit is skipped, as with no header.
      const empty = await get('/', { authorization: '' });
      expect([empty.status, empty.headers.ratelimit]).toEqual([200, undefined]);
    });

    it('limits with equal parameters but different names never share state', async () => {
      const keys: string[] = [];
      const shared = recording(store, keys);
      await build({
        routes: [
          { method: 'GET', path: '/login', limit: { name: 'login', algorithm: window(1), store: shared } },
          { method: 'GET', path: '/reset', limit: { name: 'reset', algorithm: window(1), store: shared } },
        ],
      });
      expect((await get('/login')).status).toBe(200);
      expect((await get('/reset')).status).toBe(200);
      expect((await get('/login')).status).toBe(429);
      const [login, reset] = keys.map((entry) => entry.split(' '));
      expect(login![1]).toBe(reset![1]);
      expect(login![0]).not.toBe(reset![0]);
    });

    it('byRoute counts per route pattern, never per raw URL', async () => {
      const limit: Options = { name: 'route', key: byRoute(), algorithm: window(2), store };
      await build({
        routes: [
          { method: 'GET', path: '/users/:id', limit },
          { method: 'GET', path: '/items/:id', limit },
        ],
      });
      expect((await get('/users/1')).headers.ratelimit).toBe('"route";r=1;t=10');
      expect((await get('/users/2')).headers.ratelimit).toBe('"route";r=0;t=10');
      expect((await get('/users/3?page=2')).status).toBe(429);
      expect((await get('/items/1')).headers.ratelimit).toBe('"route";r=1;t=10');
    });

    it('regression: HEAD counts against the GET route it runs, never a quota of its own (issue 11, 3.7)', async () => {
      const limit: Options = { name: 'route', key: compose(byIp(), byRoute()), algorithm: window(3), store };
      await build({ routes: [{ method: 'GET', path: '/users/:id', limit }] });
      expect((await get('/users/1')).headers.ratelimit).toBe('"route";r=2;t=10');
      const head = await app!.request('HEAD', '/users/2');
      expect([head.status, head.headers.ratelimit]).toEqual([200, '"route";r=1;t=10']);
      expect((await get('/users/3')).headers.ratelimit).toBe('"route";r=0;t=10');
      expect((await app!.request('HEAD', '/users/4')).status).toBe(429);
      expect((await get('/users/5')).status).toBe(429);
    });

    describe('client address', () => {
      const warnings: SluiceWarning[] = [];
      beforeEach(() => {
        warnings.length = 0;
        // Each warning is given once per process: every test here starts from none given.
        forgetWarnings();
      });
      const perIp = (extra: Partial<Options> = {}): Options => ({
        name: 'ip',
        algorithm: window(1),
        store,
        onWarning: (warning) => warnings.push(warning),
        ...extra,
      });

      it('ignores X-Forwarded-For when no proxy is trusted, and warns once', async () => {
        await build({ options: perIp(), routes: [{ method: 'GET', path: '/' }] });
        expect((await get('/', { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
        expect((await get('/', { 'x-forwarded-for': '203.0.113.2' })).status).toBe(429);
        expect(warnings.map((w) => w.code)).toEqual(['SLUICE_FORWARDED_UNTRUSTED']);
      });

      it('with a trusted proxy: IPv6 grouped by /56, IPv4-mapped IPv6 is IPv4, no warning', async () => {
        await build({ options: perIp(), trustProxy: 'loopback', routes: [{ method: 'GET', path: '/' }] });
        const from = (ip: string) => get('/', { 'x-forwarded-for': ip });
        expect((await from('2001:db8:0:100::1')).status).toBe(200);
        expect((await from('2001:db8:0:1ff:abcd::2')).status).toBe(429);
        expect((await from('2001:db8:0:200::1')).status).toBe(200);
        expect((await from('::ffff:203.0.113.9')).status).toBe(200);
        expect((await from('203.0.113.9')).status).toBe(429);
        expect((await from('203.0.113.10')).status).toBe(200);
        expect(warnings).toEqual([]);
      });

      it('ipv6Subnet: 64 separates what /56 groups', async () => {
        await build({
          options: perIp({ key: byIp({ ipv6Subnet: 64 }) }),
          trustProxy: 'loopback',
          routes: [{ method: 'GET', path: '/' }],
        });
        expect((await get('/', { 'x-forwarded-for': '2001:db8:0:100::1' })).status).toBe(200);
        expect((await get('/', { 'x-forwarded-for': '2001:db8:0:1ff::2' })).status).toBe(200);
        expect((await get('/', { 'x-forwarded-for': '2001:db8:0:100::ffff' })).status).toBe(429);
      });

      it("regression: an app-wide and a route's byIp() behind an untrusted proxy warn once per process, not once each (issue 22 §3)", async () => {
        await build({
          options: perIp({ name: 'app', algorithm: window(5) }),
          routes: [
            { method: 'GET', path: '/' },
            { method: 'GET', path: '/own', limit: perIp({ name: 'route', algorithm: window(5) }) },
          ],
        });
        for (const path of ['/', '/own', '/', '/own']) {
          expect((await get(path, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
        }
        expect(warnings.map((w) => w.code)).toEqual(['SLUICE_FORWARDED_UNTRUSTED']);
      });

      it('byIp() on a request without a client address (a Unix socket): not limited, and SLUICE_NO_CLIENT_ADDRESS once per process (issue 27)', async () => {
        await build({
          options: perIp(),
          routes: [
            { method: 'GET', path: '/' },
            { method: 'GET', path: '/own', limit: perIp({ name: 'route' }) },
          ],
        });
        for (const path of ['/', '/', '/own', '/own']) {
          const reply = await app!.requestOverUnixSocket('GET', path);
          expect([path, reply.status, reply.headers.ratelimit]).toEqual([path, 200, undefined]);
        }
        expect(warnings.map((w) => w.code)).toEqual(['SLUICE_NO_CLIENT_ADDRESS']);
        expect(warnings[0]!.message).toMatch(/^sluice: byIp\(\) found no client address/);
        // Over TCP the same app limits by address, with no other warning.
        expect((await get('/')).status).toBe(200);
        expect((await get('/')).status).toBe(429);
        expect(warnings).toHaveLength(1);
      });

      it('warns once when the app trusts every proxy', async () => {
        await build({ options: perIp(), trustProxy: true, routes: [{ method: 'GET', path: '/' }] });
        expect((await get('/', { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
        expect((await get('/', { 'x-forwarded-for': '203.0.113.2' })).status).toBe(200);
        expect(warnings.map((w) => w.code)).toEqual(['SLUICE_TRUST_ALL_PROXIES']);
      });
    });

    it('skip and allowList: not limited, no headers', async () => {
      const skip = (req: unknown) =>
        (req as { headers: Record<string, unknown> }).headers['x-internal'] === '1';
      await build({
        options: { name: 'w', algorithm: window(1), store, skip },
        routes: [{ method: 'GET', path: '/' }],
      });
      for (let i = 0; i < 3; i++) {
        const reply = await get('/', { 'x-internal': '1' });
        expect([reply.status, reply.headers.ratelimit]).toEqual([200, undefined]);
      }
      expect((await get('/')).status).toBe(200);
      expect((await get('/')).status).toBe(429);
      await app!.close();
      await build({
        options: { name: 'allowed', algorithm: window(1), store, allowList: ['10.0.0.0/8', '127.0.0.1'] },
        routes: [{ method: 'GET', path: '/' }],
      });
      for (let i = 0; i < 3; i++) expect((await get('/')).headers.ratelimit).toBeUndefined();
      await app!.close();
      await build({
        options: { name: 'others', algorithm: window(1), store, allowList: ['10.0.0.0/8', '::1'] },
        routes: [{ method: 'GET', path: '/' }],
      });
      expect((await get('/')).status).toBe(200);
      expect((await get('/')).status).toBe(429);
    });

    it('cost as a number and as a function; a cost above the quota gets no Retry-After', async () => {
      await build({
        options: { name: 'w', algorithm: window(5), store, cost: 2 },
        routes: [{ method: 'GET', path: '/' }],
      });
      expect((await get('/')).headers.ratelimit).toBe('"w";r=3;t=10');
      expect((await get('/')).headers.ratelimit).toBe('"w";r=1;t=10');
      expect((await get('/')).status).toBe(429);
      await app!.close();
      const errors: Error[] = [];
      const cost = (req: unknown) =>
        Number((req as { headers: Record<string, string> }).headers['x-cost'] ?? 1);
      await build({
        options: { name: 'items', algorithm: window(5), store, cost, onError: (e) => errors.push(e) },
        routes: [{ method: 'GET', path: '/' }],
      });
      expect((await get('/', { 'x-cost': '4' })).headers.ratelimit).toBe('"items";r=1;t=10');
      const tooBig = await get('/', { 'x-cost': '6' });
      expect(tooBig.status).toBe(429);
      expect(tooBig.headers['retry-after']).toBeUndefined();
      expect(tooBig.body).toMatchObject({ detail: expect.stringContaining('retrying will not help') });
      // A cost function returning 0 is a bug: reported, and the failure policy (allow) applies.
      const zero = await get('/', { 'x-cost': '0' });
      expect([zero.status, zero.headers.ratelimit]).toEqual([200, undefined]);
      expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['ERR_SLUICE_INVALID_COST']);
    });

    it('onLimited sees every refusal; a custom handler replaces the body, headers stay', async () => {
      const limited: Decision[] = [];
      await build({
        options: { name: 'w', algorithm: window(1), store, onLimited: (_req, d) => limited.push(d) },
        customHandler: true,
        routes: [{ method: 'GET', path: '/' }],
      });
      expect((await get('/')).body).toEqual({ ok: true, remaining: 0 });
      const refused = await get('/');
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ custom: true, policy: 'w' });
      expect(refused.headers['retry-after']).toBe('10');
      expect(refused.headers.ratelimit).toBe('"w";r=0;t=10');
      expect(limited.map((d) => [d.allowed, d.policy, d.reason])).toEqual([[false, 'w', 'rate-limited']]);
    });

    it.skipIf(!blocksAndShadow)(
      'block: a refusal blocks the client until the block ends; onBlocked once, onDecision for every decision',
      async () => {
        const decided: Decision[] = [];
        const blocked: Decision[] = [];
        await build({
          options: {
            name: 'login',
            algorithm: window(2),
            block: '1m',
            store,
            onDecision: (_req, d) => decided.push(d),
            onBlocked: (_req, d) => blocked.push(d),
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        expect((await get('/')).status).toBe(200);
        expect((await get('/')).status).toBe(200);
        const started = await get('/');
        expect([started.status, started.headers['retry-after'], started.headers.ratelimit]).toEqual([
          429,
          '60',
          '"login";r=0;t=60',
        ]);
        now = 20_000;
        // The window has moved on; the block has not.
        const during = await get('/');
        expect([during.status, during.headers['retry-after'], during.headers.ratelimit]).toEqual([
          429,
          '40',
          '"login";r=0;t=40',
        ]);
        expect(during.body).toMatchObject({
          status: 429,
          detail: 'Blocked by "login" after too many requests. Retry in 40 s.',
          'violated-policies': ['login'],
        });
        now = 60_000;
        expect((await get('/')).status).toBe(200);
        expect(decided.map((d) => [d.allowed, d.reason])).toEqual([
          [true, undefined],
          [true, undefined],
          [false, 'rate-limited'],
          [false, 'blocked'],
          [true, undefined],
        ]);
        expect(blocked.map((d) => [d.policy, d.retryAfter])).toEqual([['login', 60_000]]);
      },
    );

    it.skipIf(!blocksAndShadow)(
      'shadow mode: a limit with enforce: false never refuses, is left out of the headers, and is reported to onDecision',
      async () => {
        const decided: Decision[] = [];
        const limited: Decision[] = [];
        await build({
          options: {
            limits: [
              { name: 'live', algorithm: window(5) },
              { name: 'new', algorithm: window(1), enforce: false },
            ],
            store,
            onDecision: (_req, d) => decided.push(d),
            onLimited: (_req, d) => limited.push(d),
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        const first = await get('/');
        expect([first.status, first.headers.ratelimit, first.headers['ratelimit-policy']]).toEqual([
          200,
          '"live";r=4;t=10',
          '"live";q=5;w=10',
        ]);
        const second = await get('/');
        expect([second.status, second.headers.ratelimit, second.headers['retry-after']]).toEqual([
          200,
          '"live";r=3;t=10',
          undefined,
        ]);
        expect(limited).toEqual([]);
        expect(decided[1]!.limits.map((d) => [d.policy, d.allowed, d.reason, d.shadow])).toEqual([
          ['live', true, undefined, undefined],
          ['new', false, 'rate-limited', true],
        ]);
      },
    );

    it.skipIf(!blocksAndShadow)(
      'shadow mode with shadowHeaders: the shadow limit is listed in the RateLimit headers',
      async () => {
        await build({
          options: {
            limits: [
              { name: 'live', algorithm: window(5) },
              { name: 'new', algorithm: window(1), enforce: false },
            ],
            shadowHeaders: true,
            store,
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        await get('/');
        const second = await get('/');
        expect([second.status, second.headers.ratelimit, second.headers['ratelimit-policy']]).toEqual([
          200,
          '"live";r=3;t=10, "new";r=0;t=10',
          '"live";q=5;w=10, "new";q=1;w=10',
        ]);
      },
    );

    it("a route's own limits add their list members to the app-wide limits' RateLimit headers", async () => {
      // Express ran the app-wide and the route's middleware each setting the headers: the route's
      // replaced the app-wide members. Fastify merges `config.rateLimit` into one limiter; the
      // other adapters run the app-wide and the route's limits one after the other, as Express.
      await build({
        options: { name: 'app', algorithm: window(3), store },
        routes: [
          { method: 'GET', path: '/own', limit: { name: 'route', algorithm: window(1), store } },
          { method: 'GET', path: '/plain' },
        ],
      });
      const first = await get('/own');
      expect([first.status, first.headers.ratelimit, first.headers['ratelimit-policy']]).toEqual([
        200,
        '"app";r=2;t=10, "route";r=0;t=10',
        '"app";q=3;w=10, "route";q=1;w=10',
      ]);
      // All-or-nothing across middlewares (issue 22 §2): the app-wide middleware took a unit before
      // the route's refused, and gave it back, so every adapter answers as Fastify, which checks
      // the merged limits in one call: the refused request took nothing from "app".
      const refused = await get('/own');
      expect([refused.status, refused.headers.ratelimit, refused.headers['ratelimit-policy']]).toEqual([
        429,
        '"app";r=2;t=10, "route";r=0;t=10',
        '"app";q=3;w=10, "route";q=1;w=10',
      ]);
      const plain = await get('/plain');
      expect([plain.status, plain.headers.ratelimit, plain.headers['ratelimit-policy']]).toEqual([
        200,
        '"app";r=1;t=10',
        '"app";q=3;w=10',
      ]);
    });

    it('regression: a request refused by a later sluice middleware gives back what earlier ones took (the app-wide burst went 15, 14, 13 on refused logins; issue 22 §2)', async () => {
      const probe = new Probe();
      const everyone = () => 'everyone';
      await build({
        options: { name: 'burst', algorithm: window(15), store },
        probe,
        routes: [
          { method: 'POST', path: '/login', limit: { name: 'login', algorithm: window(1), store } },
          {
            method: 'GET',
            path: '/export',
            handler: 'wait',
            guards: { concurrencyLimit: { limit: 1, key: everyone, store } },
          },
          { method: 'GET', path: '/' },
        ],
      });
      const login = () => app!.request('POST', '/login');
      expect((await login()).headers.ratelimit).toBe('"burst";r=14;t=10, "login";r=0;t=10');
      for (let i = 0; i < 3; i++) {
        const refused = await login();
        // Refused by the route's limit: the app-wide burst stays at 14, and its header says so.
        expect([refused.status, refused.headers.ratelimit]).toEqual([
          429,
          '"burst";r=14;t=10, "login";r=0;t=10',
        ]);
      }
      expect((await get('/')).headers.ratelimit).toBe('"burst";r=13;t=10');
      // A guard after the app-wide limit (a route's concurrency limit) refuses: the same rule.
      const held = get('/export');
      await vi.waitFor(() => expect(probe.handled).toContain('/export'), WAIT);
      for (let i = 0; i < 2; i++) {
        const busy = await get('/export');
        expect([busy.status, busy.body]).toMatchObject([429, { 'violated-policies': ['concurrency'] }]);
      }
      probe.open();
      expect((await held).status).toBe(200);
      // 15 - login - / - the held export: the refused requests took nothing.
      expect((await get('/')).headers.ratelimit).toBe('"burst";r=11;t=10');
    });

    it("a client that leaves while a route's limit asks its store gives back what the app-wide limit took (all-or-nothing across middlewares)", async () => {
      const slow = stalling(store);
      const probe = new Probe();
      let appRefunds = 0;
      const appStore: Store = {
        consume: (calls, at) => store.consume(calls, at),
        peek: (calls, at) => store.peek(calls, at),
        reset: (calls) => store.reset(calls),
        refund: async (calls, at) => {
          await store.refund!(calls, at);
          appRefunds++;
        },
        shutdown: () => undefined,
      };
      await build({
        options: { name: 'app', algorithm: window(5), store: appStore },
        probe,
        routes: [
          { method: 'GET', path: '/slow', limit: { name: 'route', algorithm: window(5), store: slow.store } },
          { method: 'GET', path: '/' },
        ],
      });
      const base = await app!.listen();
      const leaving = leavingRequest(`${base}/slow`);
      await vi.waitFor(() => expect(slow.seen.waiting).toBe(1), WAIT);
      leaving.destroy();
      await vi.waitFor(async () => expect(await app!.connections()).toBe(0), WAIT);
      slow.answer();
      await vi.waitFor(
        () => expect(slow.seen.refunded + probe.handled.length).toBeGreaterThanOrEqual(1),
        WAIT,
      );
      expect(probe.handled).toEqual([]);
      // Fastify merged the route's limits with the app's into one check on the route's store,
      // which gave its own units back; elsewhere the app-wide middleware's are given back.
      if (!subject.routeConfig) await vi.waitFor(() => expect(appRefunds).toBe(1), WAIT);
      // The departed request took nothing from "app": this one is its first.
      expect((await get('/')).headers.ratelimit).toBe('"app";r=4;t=10');
    });

    it('routes with their own limits on one store count separately unless they share a name', async () => {
      const per = (name: string): Options => ({ name, algorithm: window(2), store });
      await build({
        routes: [
          { method: 'GET', path: '/a', limit: per('a') },
          { method: 'GET', path: '/b', limit: per('b') },
          { method: 'POST', path: '/a-too', limit: per('a') },
        ],
      });
      expect((await get('/a')).headers.ratelimit).toBe('"a";r=1;t=10');
      expect((await get('/a')).headers.ratelimit).toBe('"a";r=0;t=10');
      expect((await get('/b')).headers.ratelimit).toBe('"b";r=1;t=10');
      expect((await app!.request('POST', '/a-too')).status).toBe(429);
    });

    describe('store failure', () => {
      it.each(['throw', 'reject'] as const)(
        'store that %ss, storeFailure allow: served, reported',
        async (mode) => {
          const errors: Error[] = [];
          await build({
            options: {
              name: 'w',
              algorithm: window(1),
              store: failingStore(mode),
              onError: (e) => errors.push(e),
            },
            routes: [{ method: 'GET', path: '/' }],
          });
          const reply = await get('/');
          expect([reply.status, reply.headers.ratelimit]).toEqual([200, undefined]);
          expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['ERR_SLUICE_STORE_FAILURE']);
        },
      );

      it.each(['throw', 'reject'] as const)('store that %ss, storeFailure deny: 503', async (mode) => {
        const errors: Error[] = [];
        await build({
          options: {
            name: 'w',
            algorithm: window(1),
            store: failingStore(mode),
            storeFailure: 'deny',
            onError: (e) => errors.push(e),
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        const reply = await get('/');
        expect([reply.status, reply.headers['retry-after'], reply.headers.ratelimit]).toEqual([
          503,
          '1',
          undefined,
        ]);
        expect(reply.body).toMatchObject({
          type: TEMPORARY_REDUCED_CAPACITY,
          status: 503,
          'violated-policies': [],
        });
        expect(errors).toHaveLength(1);
      });
    });

    describe("onLimit: 'delay'", () => {
      it('holds queued requests for the decision delay, refuses when the queue is full', async () => {
        const holds: number[] = [];
        const queue = leakyBucketQueue({ rate: 1, period: '1s', burst: 1, queue: 2 });
        const hold = async (ms: number) => {
          holds.push(ms);
        };
        await build({
          options: { name: 'q', algorithm: queue, store, onLimit: 'delay', hold },
          routes: [{ method: 'GET', path: '/' }],
        });
        const first = await get('/');
        expect([first.status, first.headers.ratelimit, first.headers['ratelimit-policy']]).toEqual([
          200,
          '"q";r=2;t=1',
          '"q";q=3;w=3',
        ]);
        expect((await get('/')).headers.ratelimit).toBe('"q";r=1;t=2');
        expect((await get('/')).headers.ratelimit).toBe('"q";r=0;t=3');
        expect(holds).toEqual([1000, 2000]);
        const full = await get('/');
        // Held once for its retryAfter (the fake clock did not move), then refused: a slot frees
        // in 1 s (the queue is empty in 3 s), and both headers say 1 s.
        expect([full.status, full.headers['retry-after'], full.headers.ratelimit]).toEqual([
          429,
          '1',
          '"q";r=0;t=1',
        ]);
        expect(holds).toEqual([1000, 2000, 1000]);
      });

      it('holds a refused request until its retryAfter, then checks once more', async () => {
        const holds: number[] = [];
        const hold = async (ms: number) => {
          holds.push(ms);
          now += ms;
        };
        await build({
          options: {
            name: 'tb',
            algorithm: tokenBucket({ capacity: 1, refillInterval: '1s' }),
            store,
            onLimit: 'delay',
            hold,
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        expect((await get('/')).status).toBe(200);
        expect((await get('/')).status).toBe(200);
        expect(holds).toEqual([1000]);
      });

      it('refuses a wait longer than maxDelay and gives the queue slot back', async () => {
        const holds: number[] = [];
        await build({
          options: {
            name: 'q',
            algorithm: leakyBucketQueue({ rate: 1, period: '1s', burst: 1, queue: 5 }),
            store,
            onLimit: 'delay',
            maxDelay: 1500,
            hold: async (ms) => {
              holds.push(ms);
            },
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        expect((await get('/')).status).toBe(200);
        expect((await get('/')).status).toBe(200);
        const tooLong = await get('/');
        // The queue would hold it 2 s, past maxDelay: refused, and its reset says the same 2 s.
        expect([tooLong.status, tooLong.headers['retry-after'], tooLong.headers.ratelimit]).toEqual([
          429,
          '2',
          '"q";r=4;t=2',
        ]);
        // Without the refund this would be a 3 s wait.
        expect((await get('/')).headers['retry-after']).toBe('2');
        expect(holds).toEqual([1000]);
      });

      it('a client that disconnects while held gives its slot back', async () => {
        const holds: number[] = [];
        let aborted = false;
        let held!: () => void;
        const firstHold = new Promise<void>((resolve) => {
          held = resolve;
        });
        const hold = (ms: number, signal: AbortSignal) => {
          holds.push(ms);
          if (holds.length > 1) return Promise.resolve();
          held();
          return new Promise<void>((_resolve, reject) => {
            signal.addEventListener('abort', () => {
              aborted = true;
              reject(signal.reason);
            });
          });
        };
        await build({
          options: {
            name: 'q',
            algorithm: leakyBucketQueue({ rate: 1, period: '1s', burst: 1, queue: 5 }),
            store,
            onLimit: 'delay',
            hold,
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        const base = await app!.listen();
        expect((await fetch(`${base}/`)).status).toBe(200);
        const leaving = httpRequest(`${base}/`);
        leaving.on('error', () => undefined);
        leaving.end();
        await firstHold;
        leaving.destroy();
        await vi.waitFor(() => expect(aborted).toBe(true), WAIT);
        const next = await fetch(`${base}/`);
        expect(next.status).toBe(200);
        // The departed request's 1 s slot was given back: the next one waits 1 s, not 2 s.
        expect(holds).toEqual([1000, 1000]);
      });
      it('clients that leave before the store answers give their queue slots back; their handlers never run', async () => {
        // Regression: the close listener was attached only once the store had answered, so a
        // client gone during a stalled store call kept its slot (the next request waited 5 s)
        // and its handler still ran.
        const slow = stalling(store);
        const holds: number[] = [];
        const probe = new Probe();
        await build({
          options: {
            name: 'q',
            algorithm: leakyBucketQueue({ rate: 1, period: '1s', burst: 1, queue: 10 }),
            store: slow.store,
            onLimit: 'delay',
            hold: async (ms) => {
              holds.push(ms);
            },
          },
          probe,
          routes: [{ method: 'GET', path: '/' }],
        });
        const base = await app!.listen();
        const leaving = Array.from({ length: 5 }, () => leavingRequest(`${base}/`));
        await vi.waitFor(() => expect(slow.seen.waiting).toBe(5), WAIT);
        for (const request of leaving) request.destroy();
        // The server has seen every client go before the store answers.
        await vi.waitFor(async () => expect(await app!.connections()).toBe(0), WAIT);
        slow.answer();
        // Each departed request is either refunded (fixed) or handled (the defect): wait for all 5.
        await vi.waitFor(
          () => expect(slow.seen.refunded + probe.handled.length).toBeGreaterThanOrEqual(5),
          WAIT,
        );
        expect(probe.handled).toEqual([]);
        expect(slow.seen.refunded).toBe(5);
        const next = await get('/');
        // Every slot was given back: the next request is admitted at once, as the first one.
        expect([next.status, next.headers.ratelimit]).toEqual([200, '"q";r=10;t=1']);
        expect(holds).toEqual([]);
        expect(probe.handled).toEqual(['/']);
      });
    });

    it('serves a keep-alive connection request after request', async () => {
      await build({
        options: { name: 'w', algorithm: window(3), store },
        routes: [{ method: 'GET', path: '/' }],
      });
      const base = await app!.listen();
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const results: [number, string | undefined, boolean][] = [];
      try {
        for (let i = 0; i < 4; i++) {
          results.push(
            await new Promise((resolve, reject) => {
              const req = httpRequest(`${base}/`, { agent }, (res) => {
                res.resume();
                res.on('end', () =>
                  resolve([res.statusCode!, res.headers.ratelimit as string, req.reusedSocket]),
                );
              });
              req.on('error', reject);
              req.end();
            }),
          );
        }
      } finally {
        agent.destroy();
      }
      expect(results).toEqual([
        [200, '"w";r=2;t=10', false],
        [200, '"w";r=1;t=10', true],
        [200, '"w";r=0;t=10', true],
        [429, '"w";r=0;t=10', true],
      ]);
    });

    if (subject.routeConfig) {
      it('per-route config adds, overrides and exempts; the decorator limits one route', async () => {
        await build({
          options: { name: 'burst', algorithm: window(1), store },
          routes: [
            { method: 'GET', path: '/a' },
            { method: 'GET', path: '/exempt', limit: false },
            {
              method: 'GET',
              path: '/override',
              limit: { limits: [{ name: 'burst', algorithm: window(3) }] },
            },
            {
              method: 'GET',
              path: '/extra',
              limit: { limits: [{ name: 'login', algorithm: fixedWindow({ limit: 5, window: '1m' }) }] },
            },
            {
              method: 'GET',
              path: '/decorated',
              limit: false,
              decorator: { name: 'deco', algorithm: window(1) },
            },
          ],
        });
        expect((await get('/a')).headers.ratelimit).toBe('"burst";r=0;t=10');
        expect((await get('/a')).status).toBe(429);
        for (let i = 0; i < 3; i++) {
          const reply = await get('/exempt');
          expect([reply.status, reply.headers.ratelimit]).toEqual([200, undefined]);
        }
        const override = await get('/override');
        expect([override.status, override.headers['ratelimit-policy'], override.headers.ratelimit]).toEqual([
          200,
          '"burst";q=3;w=10',
          '"burst";r=2;t=10',
        ]);
        const extra = await get('/extra');
        expect([extra.status, extra.headers.ratelimit]).toEqual([429, '"burst";r=0;t=10, "login";r=5;t=0']);
        expect((await get('/decorated')).headers.ratelimit).toBe('"deco";r=0;t=10');
        expect((await get('/decorated')).status).toBe(429);
      });
    }

    it('rejects bad options at creation with coded errors', async () => {
      const algorithm = window(1);
      const code = (options: unknown) =>
        subject.create(options).then(
          () => 'created',
          (error: { code?: string }) => error.code,
        );
      expect(await code({ algorithm, bogus: 1 })).toBe('ERR_SLUICE_UNKNOWN_OPTION');
      expect(await code({ algorithm, headers: 'draft-99' })).toBe('ERR_SLUICE_INVALID_OPTION');
      expect(await code({ algorithm, limits: [{ algorithm }] })).toBe('ERR_SLUICE_INVALID_OPTION');
      expect(await code({ name: 'no-algorithm', store })).toBe('ERR_SLUICE_MISSING_OPTION');
      expect(await code({ algorithm, cost: 0 })).toBe('ERR_SLUICE_INVALID_OPTION');
      expect(await code({ algorithm, allowList: ['10.0.0.0/33'] })).toBe('ERR_SLUICE_INVALID_OPTION');
      expect(await code({ algorithm: leakyBucketQueue({ rate: 1, period: '1s', queue: 1 }) })).toBe(
        'ERR_SLUICE_INVALID_OPTION',
      );
      expect(
        await code({
          limits: [
            { name: 'a', algorithm },
            { name: 'a', algorithm },
          ],
        }),
      ).toBe('ERR_SLUICE_DUPLICATE_LIMIT');
      // Issue 22 §3: the factory given uncalled, and a limit without its algorithm.
      expect(await code({ algorithm: fixedWindow })).toBe('ERR_SLUICE_UNKNOWN_ALGORITHM');
      expect(await code({ limits: [{ name: 'x' }] })).toBe('ERR_SLUICE_MISSING_OPTION');
      expect(await code({ algorithm, key: byIp() })).toBe('created');
    });

    guardSuite(subject, makeStore);
    featuresSuite(fixture);
  });
}
