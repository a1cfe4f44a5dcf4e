import {
  type Algorithm,
  fixedWindow,
  gcra,
  type RequestAccess,
  type Store,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppSpec, SuiteFixture } from './harness.js';

/** The key of the `X-User` header (two arguments: every adapter passes its own request). */
/**
 * A refund lands after the response has ended, on the event loop's next turns: waited for, with a
 * bound that only turns a hang into a failure (vi.waitFor's default 1 s is too short on a loaded
 * 2-core machine), checked every 5 ms rather than its default 50.
 */
const WAIT = { timeout: 10_000, interval: 5 };
const byUser = (req: unknown, access: RequestAccess<unknown>) => access.header(req, 'x-user');
const byUserAsync = async (req: unknown, access: RequestAccess<unknown>) => access.header(req, 'x-user');

/** The suite's one-argument functions read a Node request (Hono's is given `c.env.incoming`). */
type NodeRequest = { headers: Record<string, string | string[] | undefined> };
const header = (req: unknown, name: string) => (req as NodeRequest).headers[name];

/** A store whose refunds and charges are counted once done: what a test awaits after a response. */
function counting(store: Store) {
  const done = { refunds: 0, charges: 0 };
  const counted: Store = {
    consume: (calls, now) => store.consume(calls, now),
    peek: (calls, now) => store.peek(calls, now),
    reset: (calls) => store.reset(calls),
    refund: async (calls, now) => {
      await store.refund!(calls, now);
      done.refunds++;
    },
    charge: async (calls, now) => {
      const taken = await store.charge!(calls, now);
      done.charges++;
      return taken;
    },
    shutdown: () => store.shutdown(),
  };
  return { store: counted, done };
}

/**
 * Issue 14, items 1, 2, 5 and 6 on every adapter and store: plans per request, async functions,
 * counting by outcome, reserve-then-settle, and peek/reset from the app's code.
 */
export function featuresSuite(
  fixture: SuiteFixture,
  /** Algorithms the store refuses (`ERR_SLUICE_UNSUPPORTED`): their plan-change case is left out. */
  unsupported: readonly string[] = [],
): void {
  describe('per-request plans, count, settle, peek and reset (issue 14)', () => {
    const { build } = fixture;
    let store: Store;
    beforeEach(() => {
      store = fixture.store();
    });
    const as = (user: string, path = '/', extra: Record<string, string> = {}) =>
      fixture.app().request('GET', path, { 'x-user': user, ...extra });
    const window = (limit: number) => fixedWindow({ limit, window: '10s' });

    it.each(['sync', 'async'] as const)(
      'a %s plan per request: headers report the quota resolved for the request',
      async (mode) => {
        const tiers: Record<string, Algorithm> = { free: window(2), pro: window(5) };
        const plan = (tier: string) => tiers[tier]!;
        await build({
          options: {
            name: 'plan',
            key: mode === 'sync' ? byUser : byUserAsync,
            // The tier of the user, as a database would answer it.
            algorithm:
              mode === 'sync'
                ? (req) => plan(header(req, 'x-tier') as string)
                : async (req) => plan(header(req, 'x-tier') as string),
            store,
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        const free = await as('ann', '/', { 'x-tier': 'free' });
        const pro = await as('bob', '/', { 'x-tier': 'pro' });
        expect([free.headers['ratelimit-policy'], free.headers.ratelimit]).toEqual([
          '"plan";q=2;w=10',
          '"plan";r=1;t=10',
        ]);
        expect([pro.headers['ratelimit-policy'], pro.headers.ratelimit]).toEqual([
          '"plan";q=5;w=10',
          '"plan";r=4;t=10',
        ]);
      },
    );

    it('the plan is asked once per key while cached, and the cache is bounded', async () => {
      const asked: string[] = [];
      const spec = (max?: number): AppSpec => ({
        options: {
          name: 'plan',
          key: byUser,
          algorithm: async (req) => {
            asked.push(header(req, 'x-user') as string);
            return window(10);
          },
          ...(max === undefined ? {} : { planCache: { max } }),
          store,
        },
        routes: [{ method: 'GET', path: '/' }],
      });
      await build(spec());
      for (const user of ['ann', 'bob', 'ann', 'bob']) expect((await as(user)).status).toBe(200);
      expect(asked).toEqual(['ann', 'bob']);
      await fixture.app().close();
      asked.length = 0;
      await build(spec(1));
      for (const user of ['ann', 'bob', 'ann']) expect((await as(user)).status).toBe(200);
      // One key kept: each user pushed the other out.
      expect(asked).toEqual(['ann', 'bob', 'ann']);
    });

    const every: [string, (limit: number) => Algorithm][] = [
      ['fixedWindow', (limit) => fixedWindow({ limit, window: '10s' })],
      ['slidingWindowLog', (limit) => slidingWindowLog({ limit, window: '10s' })],
      ['slidingWindowCounter', (limit) => slidingWindowCounter({ limit, window: '10s' })],
      ['tokenBucket', (limit) => tokenBucket({ capacity: limit, refillInterval: '10s' })],
      ['gcra', (limit) => gcra({ rate: limit, period: '10s' })],
    ];
    const carried = every.filter(([name]) => !unsupported.includes(name));
    it.each(carried)(
      'a plan change carries the consumption over (%s): an upgrade keeps what was used, a downgrade is not driven below zero',
      async (_name, make) => {
        let tier = 2;
        await build({
          options: { name: 'plan', key: byUser, algorithm: () => make(tier), planCache: { ttl: 0 }, store },
          routes: [{ method: 'GET', path: '/' }],
        });
        expect((await as('ann')).status).toBe(200);
        expect((await as('ann')).status).toBe(200);
        expect((await as('ann')).status).toBe(429);
        tier = 5;
        // Two of five used: this request takes the third.
        const upgraded = await as('ann');
        expect([upgraded.status, upgraded.headers['ratelimit-policy']]).toEqual([200, '"plan";q=5;w=10']);
        expect(upgraded.headers.ratelimit).toMatch(/^"plan";r=2;/);
        expect((await as('ann')).headers.ratelimit).toMatch(/^"plan";r=1;/);
        // Another user on the new plan starts afresh.
        expect((await as('bob')).headers.ratelimit).toMatch(/^"plan";r=4;/);
        tier = 2;
        // Four used, two allowed: full, not negative.
        const downgraded = await as('ann');
        expect([downgraded.status, downgraded.headers['ratelimit-policy']]).toEqual([429, '"plan";q=2;w=10']);
        expect(downgraded.headers.ratelimit).toMatch(/^"plan";r=0;/);
      },
    );

    it('async key, skip and cost', async () => {
      await build({
        options: {
          name: 'w',
          key: byUserAsync,
          skip: async (req) => header(req, 'x-skip') === '1',
          cost: async (req) => Number(header(req, 'x-cost') ?? 1),
          algorithm: window(5),
          store,
        },
        routes: [{ method: 'GET', path: '/' }],
      });
      expect((await as('ann', '/', { 'x-cost': '3' })).headers.ratelimit).toBe('"w";r=2;t=10');
      const skipped = await as('ann', '/', { 'x-skip': '1' });
      expect([skipped.status, skipped.headers.ratelimit]).toEqual([200, undefined]);
      expect((await as('ann', '/', { 'x-cost': '3' })).status).toBe(429);
      expect((await as('ann')).headers.ratelimit).toBe('"w";r=1;t=10');
    });

    const failing = (how: 'throw' | 'reject') => () => {
      if (how === 'throw') throw new Error('lookup failed');
      return Promise.reject(new Error('lookup failed'));
    };
    const broken = (what: 'key' | 'skip' | 'cost' | 'plan', how: 'throw' | 'reject') => {
      const fail = failing(how);
      if (what === 'key')
        return { key: (_req: unknown, _access: unknown) => fail() as never, algorithm: window(5) };
      if (what === 'plan') return { key: byUser, algorithm: () => fail() as never };
      return { key: byUser, algorithm: window(5), [what]: fail };
    };
    describe.each(['key', 'skip', 'cost', 'plan'] as const)('a %s function that fails', (what) => {
      it.each(['throw', 'reject'] as const)(
        'that %ss follows the failure policy (allow: served without headers; deny: 503), reported to onError',
        async (how) => {
          for (const storeFailure of ['allow', 'deny'] as const) {
            const errors: Error[] = [];
            await build({
              options: {
                name: 'w',
                ...broken(what, how),
                store,
                storeFailure,
                onError: (error) => errors.push(error),
              },
              routes: [{ method: 'GET', path: '/' }],
            });
            const reply = await as('ann');
            expect([reply.status, reply.headers.ratelimit]).toEqual([
              storeFailure === 'allow' ? 200 : 503,
              undefined,
            ]);
            expect(errors.map((error) => error.message)).toEqual(['lookup failed']);
            await fixture.app().close();
          }
        },
      );
    });

    it("count: 'failed': a successful response gives its units back (the login brute-force limit)", async () => {
      const { store: counted, done } = counting(store);
      await build({
        options: { name: 'login', key: byUser, algorithm: window(2), count: 'failed', store: counted },
        routes: [
          { method: 'GET', path: '/', handler: 'ok' },
          { method: 'GET', path: '/fail', handler: 'throw' },
        ],
      });
      for (let i = 1; i <= 3; i++) {
        const reply = await as('ann');
        expect([reply.status, reply.headers.ratelimit]).toEqual([200, '"login";r=1;t=10']);
        // The units come back when the response has ended: wait for the store to have them.
        await vi.waitFor(() => expect(done.refunds).toBe(i), WAIT);
      }
      expect((await as('ann', '/fail')).status).toBe(500);
      expect((await as('ann', '/fail')).status).toBe(500);
      const refused = await as('ann');
      expect([refused.status, refused.headers.ratelimit]).toEqual([429, '"login";r=0;t=10']);
      expect(done.refunds).toBe(3);
    });

    it("count: 'successful' and a function of the response's outcome", async () => {
      const counts = [
        ['successful', 'ann'],
        [(_req: unknown, outcome: { statusCode: number }) => outcome.statusCode < 500, 'bob'],
      ] as const;
      for (const [count, user] of counts) {
        const { store: counted, done } = counting(store);
        // Each on its own user: the store is the test's.
        const on = (path?: string) => as(user, path);
        await build({
          options: { name: 'ok', key: byUser, algorithm: window(1), count, store: counted },
          routes: [
            { method: 'GET', path: '/', handler: 'ok' },
            { method: 'GET', path: '/fail', handler: 'throw' },
          ],
        });
        expect((await on('/fail')).status).toBe(500);
        await vi.waitFor(() => expect(done.refunds).toBe(1), WAIT);
        expect((await on('/fail')).status).toBe(500);
        await vi.waitFor(() => expect(done.refunds).toBe(2), WAIT);
        expect((await on()).status).toBe(200);
        expect((await on()).status).toBe(429);
        await fixture.app().close();
      }
    });

    it('reserve, then settle: the estimate is taken before, settled to the actual cost after, never below zero', async () => {
      await build({
        options: { name: 'tokens', key: byUser, algorithm: window(100), cost: 10, store },
        routes: [{ method: 'GET', path: '/chat', handler: 'settle' }],
      });
      const chat = (actual: string) => as('ann', '/chat', { 'x-actual': actual });
      // Reserved 10 (r=90 when admitted), settled to 3: 7 given back.
      expect((await chat('3')).headers.ratelimit).toBe('"tokens";r=90;t=10');
      // 97 left, 10 reserved; settled to 30: 20 more taken.
      expect((await chat('30')).headers.ratelimit).toBe('"tokens";r=87;t=10');
      // 67 left, 10 reserved; settled to 1000: the 57 left taken, the rest forgiven.
      expect((await chat('1000')).headers.ratelimit).toBe('"tokens";r=57;t=10');
      const refused = await chat('1');
      expect([refused.status, refused.headers.ratelimit]).toEqual([429, '"tokens";r=0;t=10']);
      fixture.setNow(10_000);
      // An actual cost that is not an integer ≥ 0 is the app's mistake: it throws (a 500 here).
      expect((await chat('-1')).status).toBe(500);
      expect((await chat('0')).headers.ratelimit).toBe('"tokens";r=80;t=10');
      expect((await chat('0')).headers.ratelimit).toBe('"tokens";r=80;t=10');
    });

    it('peek(req) reads without consuming; reset(req) and reset(key) forget', async () => {
      await build({
        options: { name: 'w', key: byUser, algorithm: window(3), store },
        routes: [
          { method: 'GET', path: '/', handler: 'ok' },
          { method: 'GET', path: '/peek', handler: 'peek' },
          { method: 'GET', path: '/reset', handler: 'reset' },
        ],
      });
      expect((await as('ann')).headers.ratelimit).toBe('"w";r=2;t=10');
      const peeked = await as('ann', '/peek');
      // This request took one (r=1), and one more would leave none: peek reports it as it stands.
      expect([peeked.headers.ratelimit, (peeked.body as { peeked: number }).peeked]).toEqual([
        '"w";r=1;t=10',
        1,
      ]);
      expect((await as('ann', '/peek')).body).toMatchObject({ peeked: 0 });
      expect((await as('ann')).status).toBe(429);
      await fixture.app().reset('ann');
      expect((await as('ann')).headers.ratelimit).toBe('"w";r=2;t=10');
      expect((await as('bob')).headers.ratelimit).toBe('"w";r=2;t=10');
      await as('ann', '/reset');
      expect((await as('ann')).headers.ratelimit).toBe('"w";r=2;t=10');
      expect((await as('bob')).headers.ratelimit).toBe('"w";r=1;t=10');
    });
  });
}
