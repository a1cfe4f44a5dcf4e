import { request as httpRequest } from 'node:http';
import {
  ConcurrencyLimiter,
  type Decision,
  FleetShedder,
  fixedWindow,
  type Store,
  UtilizationShedder,
} from '@sluice/core';
import type { HttpConcurrencyOptions } from '@sluice/core/adapter';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QUOTA_EXCEEDED, TEMPORARY_REDUCED_CAPACITY } from '../../packages/core/src/http/problem.js';
import {
  type AppSpec,
  type Guards,
  Probe,
  type Reply,
  type StoreFactory,
  type Subject,
  type TestApp,
} from './harness.js';

/**
 * Lets the event loop turn (I/O included) until `done()` holds. The bound is wall-clock time, not
 * a count of turns: on a busy CI machine a Redis round trip can outlast thousands of idle turns.
 * Nothing here waits on a timer for its result; the deadline only turns a hang into a failure.
 */
async function until(done: () => boolean | Promise<boolean>, withinMs = 10_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    if (await done()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (await done()) return;
  throw new Error(`condition not reached within ${withinMs} ms`);
}

const header = (name: string) => (req: unknown) =>
  (req as { headers: Record<string, string | undefined> }).headers[name];
/** Every request in one concurrency bucket. */
const everyone = () => 'everyone';
/** The priority from an `x-priority` header (a classifier reading the request). */
const byHeader = (req: unknown) => header('x-priority')(req) ?? 'normal';

/**
 * The concurrency limit and both load shedders, through each adapter: leases given back however a
 * request ends, exact limits, priorities, refusals, and the order of the chain. Requests are held
 * in flight by handlers waiting on `Probe`, never by timers; the store runs on a fake clock.
 */
export function guardSuite(subject: Subject, makeStore: StoreFactory): void {
  describe('concurrency limit and load shedding', () => {
    let now: number;
    let store: Store;
    let app: TestApp | undefined;
    let probe: Probe;
    const clock = () => now;

    beforeEach(async () => {
      now = 0;
      store = await makeStore(clock);
      probe = new Probe();
    });
    afterEach(async () => {
      probe.open();
      await app?.close();
      app = undefined;
      await store.shutdown();
    });

    const build = async (spec: Omit<AppSpec, 'probe'>) => {
      app = await subject.build({ ...spec, probe });
      return app;
    };
    const get = (path: string, headers?: Record<string, string>) => app!.request('GET', path, headers);
    const as = (priority: string) => ({ 'x-priority': priority });
    const routes: AppSpec['routes'] = [
      { method: 'GET', path: '/', handler: 'ok' },
      { method: 'GET', path: '/slow', handler: 'wait' },
      { method: 'GET', path: '/fail', handler: 'throw' },
    ];
    /** A limiter with the middleware's name on the same store: it sees the same leases. */
    const observer = (options: { limit: number; name?: string }) =>
      new ConcurrencyLimiter({ limit: options.limit, name: options.name ?? 'concurrency', store });
    const inFlight = async (limiter: ConcurrencyLimiter, key = 'everyone') =>
      limiter.limit - (await limiter.peek(key)).remaining;
    const fleetInFlight = async (shedder: FleetShedder) =>
      shedder.budget - (await shedder.peek(shedder.priorities[0]!)).remaining;
    /** Starts a request and records its reply when it comes. */
    const start = (replies: Reply[], path: string, headers?: Record<string, string>) =>
      get(path, headers).then((reply) => {
        replies.push(reply);
        return reply;
      });

    describe('concurrencyLimit', () => {
      const concurrency = (extra: Partial<HttpConcurrencyOptions<unknown>> = {}): Guards => ({
        concurrencyLimit: { limit: 1, key: everyone, store, ...extra },
      });

      it('holds a lease while the handler runs, refuses with 429 meanwhile, gives it back on finish', async () => {
        await build({ guards: concurrency(), routes });
        const leases = observer({ limit: 1 });
        const slow = get('/slow');
        await until(() => probe.handled.length === 1);
        expect(await inFlight(leases)).toBe(1);
        const refused = await get('/');
        expect([refused.status, refused.headers['retry-after'], refused.headers.ratelimit]).toEqual([
          429,
          '1',
          undefined,
        ]);
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(refused.body).toEqual({
          type: QUOTA_EXCEEDED,
          title: 'Request cannot be satisfied as assigned quota has been exceeded',
          status: 429,
          detail: 'Too many requests in flight for "concurrency". Retry in 1 s.',
          'violated-policies': ['concurrency'],
        });
        // The refused request did no work in the app.
        expect(probe.handled).toEqual(['/slow']);
        probe.open();
        expect((await slow).status).toBe(200);
        expect(await inFlight(leases)).toBe(0);
        expect((await get('/')).status).toBe(200);
        expect(await inFlight(leases)).toBe(0);
      });

      it('gives the lease back when the handler throws', async () => {
        await build({ guards: concurrency(), routes });
        const leases = observer({ limit: 1 });
        for (let i = 0; i < 3; i++) expect((await get('/fail')).status).toBe(500);
        expect(await inFlight(leases)).toBe(0);
        expect((await get('/')).status).toBe(200);
      });

      it('gives the lease back when the client disconnects mid-request (a real connection)', async () => {
        await build({ guards: concurrency(), routes });
        const leases = observer({ limit: 1 });
        const base = await app!.listen();
        const leaving = httpRequest(`${base}/slow`);
        leaving.on('error', () => undefined);
        leaving.end();
        await until(() => probe.handled.length === 1);
        expect(await inFlight(leases)).toBe(1);
        leaving.destroy();
        // The handler is still waiting: only the disconnect can have released the lease.
        await until(async () => (await inFlight(leases)) === 0);
        const next = await fetch(`${base}/`);
        expect(next.status).toBe(200);
        expect(await inFlight(leases)).toBe(0);
      });

      it('on an asynchronous store, a client that leaves while its lease is being taken does not leak it', async () => {
        const memory = store.leases!;
        let answer: (() => void) | undefined;
        const slowLeases: Store = {
          ...store,
          leases: {
            ...memory,
            acquire: (call, at) =>
              new Promise((resolve) => {
                answer = () => resolve(memory.acquire(call, at));
              }),
            release: (call, at) => Promise.resolve(memory.release(call, at)),
          },
        };
        let socketClosed = false;
        const key = (req: unknown) => {
          const raw =
            (req as { raw?: { socket: NodeJS.EventEmitter } }).raw ??
            (req as { socket: NodeJS.EventEmitter });
          raw.socket.once('close', () => {
            socketClosed = true;
          });
          return 'everyone';
        };
        await build({ guards: concurrency({ store: slowLeases, key }), routes });
        const leases = observer({ limit: 1 });
        const base = await app!.listen();
        const leaving = httpRequest(`${base}/slow`);
        leaving.on('error', () => undefined);
        leaving.end();
        await until(() => answer !== undefined);
        leaving.destroy();
        // The server saw the disconnect before the store answered.
        await until(() => socketClosed);
        answer!();
        await until(async () => (await inFlight(leases)) === 0);
        expect(probe.handled).toEqual([]);
        answer = undefined;
        const served = fetch(`${base}/`);
        await until(() => answer !== undefined);
        answer!();
        expect((await served).status).toBe(200);
        await until(async () => (await inFlight(leases)) === 0);
      });

      it('admits exactly N of N + 1 concurrent requests', async () => {
        await build({ guards: concurrency({ limit: 3 }), routes });
        const leases = observer({ limit: 3 });
        const replies: Reply[] = [];
        const all = [1, 2, 3, 4].map(() => start(replies, '/slow'));
        await until(() => replies.length === 1 && probe.handled.length === 3);
        expect(replies.map((r) => r.status)).toEqual([429]);
        expect(await inFlight(leases)).toBe(3);
        probe.open();
        const statuses = (await Promise.all(all)).map((r) => r.status).sort();
        expect(statuses).toEqual([200, 200, 200, 429]);
        expect(probe.handled).toHaveLength(3);
        expect(await inFlight(leases)).toBe(0);
      });

      it('counts per key: one token at its limit does not block another', async () => {
        await build({ guards: concurrency({ key: header('x-token') }), routes });
        const slow = get('/slow', { 'x-token': 'a' });
        await until(() => probe.handled.length === 1);
        expect((await get('/', { 'x-token': 'a' })).status).toBe(429);
        expect((await get('/', { 'x-token': 'b' })).status).toBe(200);
        // No key: not guarded.
        expect((await get('/')).status).toBe(200);
        probe.open();
        expect((await slow).status).toBe(200);
      });

      it('a lease that is never released (a crashed process) expires after the ttl', async () => {
        await build({ guards: concurrency({ ttl: '10s' }), routes });
        const crashed = new ConcurrencyLimiter({ limit: 1, name: 'concurrency', store, ttl: '10s' });
        expect((await crashed.acquire('everyone')).decision.allowed).toBe(true);
        const refused = await get('/');
        expect([refused.status, refused.headers['retry-after']]).toEqual([429, '1']);
        now = 9_999;
        expect((await get('/')).status).toBe(429);
        now = 10_000;
        expect((await get('/')).status).toBe(200);
        expect(await inFlight(observer({ limit: 1 }))).toBe(0);
        expect(probe.handled).toEqual(['/']);
      });

      it('onLimited and a custom handler see the refusal', async () => {
        const limited: Decision[] = [];
        await build({
          guards: concurrency({ name: 'exports', onLimited: (_req, d) => limited.push(d) }),
          customHandler: true,
          routes,
        });
        const slow = get('/slow');
        await until(() => probe.handled.length === 1);
        const refused = await get('/');
        expect([refused.status, refused.body, refused.headers['retry-after']]).toEqual([
          429,
          { custom: true, policy: 'exports' },
          '1',
        ]);
        expect(limited.map((d) => [d.allowed, d.policy, d.reason])).toEqual([
          [false, 'exports', 'concurrency'],
        ]);
        probe.open();
        await slow;
      });

      it.each(['throw', 'reject'] as const)(
        'a lease store that %ss: allow serves unguarded, deny answers 503; both reported',
        async (mode) => {
          const fail = () => {
            if (mode === 'throw') throw new Error('store down');
            return Promise.reject(new Error('store down'));
          };
          const broken: Store = {
            consume: fail,
            peek: fail,
            reset: fail,
            shutdown: () => undefined,
            leases: { acquire: fail, peek: fail, release: fail, reset: fail },
          };
          const errors: Error[] = [];
          await build({
            guards: concurrency({ store: broken, onError: (e) => errors.push(e) }),
            routes,
          });
          expect((await get('/')).status).toBe(200);
          await app!.close();
          await build({
            guards: concurrency({ store: broken, storeFailure: 'deny', onError: (e) => errors.push(e) }),
            routes,
          });
          const denied = await get('/');
          expect([denied.status, denied.headers['retry-after']]).toEqual([503, '1']);
          expect(denied.body).toMatchObject({
            type: TEMPORARY_REDUCED_CAPACITY,
            'violated-policies': ['concurrency'],
          });
          expect(errors.map((e) => (e as { code?: string }).code)).toEqual([
            'ERR_SLUICE_STORE_FAILURE',
            'ERR_SLUICE_STORE_FAILURE',
          ]);
          expect(probe.handled).toEqual(['/']);
        },
      );
    });

    describe('fleetShed', () => {
      // Ceilings: critical 4, normal 3, low 2 (the default reserves of 20 % and 20 %).
      const fleet = (random = () => 0.5) => new FleetShedder({ budget: 4, store, random });

      it('with low and normal traffic saturating their shares, critical is still admitted and the rest get 503', async () => {
        const shedder = fleet();
        await build({ guards: { fleetShed: { shedder, priority: byHeader } }, routes });
        const held = [get('/slow', as('low')), get('/slow', as('low'))];
        await until(() => probe.handled.length === 2);
        expect(await fleetInFlight(shedder)).toBe(2);
        const shed = await get('/', as('low'));
        // retryAfter drawn from 1–5 s with the injected draw 0.5: 3 s.
        expect([shed.status, shed.headers['retry-after'], shed.headers.ratelimit]).toEqual([
          503,
          '3',
          undefined,
        ]);
        expect(shed.body).toEqual({
          type: TEMPORARY_REDUCED_CAPACITY,
          title: 'Request cannot be satisfied due to temporary server capacity constraints',
          status: 503,
          detail: 'The service is shedding load to protect itself. Retry in 3 s.',
          'violated-policies': ['fleet'],
        });
        held.push(get('/slow', as('normal')));
        await until(() => probe.handled.length === 3);
        expect((await get('/', as('normal'))).status).toBe(503);
        expect((await get('/', as('low'))).status).toBe(503);
        const critical = await get('/', as('critical'));
        expect([critical.status, critical.headers.ratelimit]).toEqual([200, undefined]);
        held.push(get('/slow', as('critical')));
        await until(() => probe.handled.length === 5);
        // The budget is a real budget: past it, critical is refused too.
        expect((await get('/', as('critical'))).status).toBe(503);
        expect(probe.handled).toEqual(['/slow', '/slow', '/slow', '/', '/slow']);
        probe.open();
        expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
        expect(await fleetInFlight(shedder)).toBe(0);
      });

      it('builds its shedder from inline options; a fixed priority suits one route', async () => {
        await build({
          routes: [
            { method: 'GET', path: '/slow', handler: 'wait' },
            {
              method: 'GET',
              path: '/report',
              guards: { fleetShed: { budget: 2, name: 'reports', priority: 'low', store } },
            },
          ],
          guards: {},
        });
        const shedder = new FleetShedder({ budget: 2, name: 'reports', store });
        // A request elsewhere holds a slot of the same budget (same name, same store).
        const lease = await shedder.acquire('critical');
        const reports = [await get('/report'), await get('/report')];
        // Low's ceiling is 1 (60 % of 2): the held slot already fills it.
        expect(reports.map((r) => r.status)).toEqual([503, 503]);
        await lease.release();
        expect((await get('/report')).status).toBe(200);
        expect(await fleetInFlight(shedder)).toBe(0);
      });
    });

    describe('utilizationShed', () => {
      let signal: number;
      let time: number;
      let draw: number;
      const utilization = () =>
        new UtilizationShedder({
          signal: () => signal,
          clock: () => time,
          random: () => draw,
          timer: false,
          delay: 0,
          ramp: '2s',
        });
      beforeEach(() => {
        signal = 0;
        time = 0;
        draw = 0.5;
      });

      it('sheds the least important priority first, never critical, and recovers gradually', async () => {
        const shedder = utilization();
        await build({ guards: { utilizationShed: { shedder, priority: byHeader } }, routes });
        expect((await get('/', as('low'))).status).toBe(200);
        signal = 1;
        time = 1_000;
        shedder.sample();
        expect(shedder.fractions()).toEqual({ critical: 0, normal: 0, low: 1 });
        const shed = await get('/', as('low'));
        // Jitter from the same draw: 0.5 / 1 across 1–5 s is 3 s.
        expect([shed.status, shed.headers['retry-after'], shed.headers.ratelimit]).toEqual([
          503,
          '3',
          undefined,
        ]);
        expect(shed.body).toMatchObject({
          type: TEMPORARY_REDUCED_CAPACITY,
          'violated-policies': ['utilization'],
        });
        expect((await get('/', as('normal'))).status).toBe(200);
        time = 2_000;
        shedder.sample();
        expect(shedder.fractions()).toEqual({ critical: 0, normal: 1, low: 1 });
        expect((await get('/', as('normal'))).status).toBe(503);
        for (const d of [0, 0.5, 0.999]) {
          draw = d;
          expect((await get('/', as('critical'))).status).toBe(200);
        }
        // Good utilization for 0.5 s: normal comes back by half, not at once.
        signal = 0;
        time = 2_500;
        shedder.sample();
        expect(shedder.fractions()).toEqual({ critical: 0, normal: 0.5, low: 1 });
        draw = 0.4;
        const half = await get('/', as('normal'));
        // Shed (0.4 < 0.5); jitter 0.4 / 0.5 = 0.8 across 1–5 s: 4.2 s, rounded up.
        expect([half.status, half.headers['retry-after']]).toEqual([503, '5']);
        draw = 0.6;
        expect((await get('/', as('normal'))).status).toBe(200);
        expect(probe.handled).toEqual(['/', '/', '/', '/', '/', '/']);
      });

      it('an unknown priority from the classifier is reported and handled by storeFailure', async () => {
        const errors: Error[] = [];
        const shedder = utilization();
        await build({
          guards: {
            utilizationShed: {
              shedder,
              priority: () => 'urgent',
              storeFailure: 'deny',
              onError: (e) => errors.push(e),
            },
          },
          routes,
        });
        expect((await get('/')).status).toBe(503);
        expect(errors.map((e) => (e as { code?: string; option?: string }).code)).toEqual([
          'ERR_SLUICE_INVALID_OPTION',
        ]);
        expect(probe.handled).toEqual([]);
      });
    });

    it('one chain: shedders first, so a shed request takes no lease and no rate-limit quota', async () => {
      let signal = 0;
      let time = 0;
      const local = new UtilizationShedder({
        signal: () => signal,
        clock: () => time,
        random: () => 0.5,
        timer: false,
        delay: 0,
        ramp: '2s',
      });
      // Ceilings: critical 2, normal 1, low 1.
      const fleet = new FleetShedder({ budget: 2, reserve: { critical: 0.5 }, store, random: () => 0 });
      await build({
        guards: {
          utilizationShed: { shedder: local, priority: byHeader },
          fleetShed: { shedder: fleet, priority: byHeader },
          concurrencyLimit: { limit: 5, key: everyone, store },
        },
        options: { name: 'w', key: everyone, algorithm: fixedWindow({ limit: 3, window: '10s' }), store },
        routes,
      });
      const leases = observer({ limit: 5 });
      signal = 1;
      time = 1_000;
      local.sample();
      for (let i = 0; i < 2; i++) {
        const shed = await get('/', as('low'));
        expect([shed.status, shed.headers.ratelimit]).toEqual([503, undefined]);
        expect(shed.body).toMatchObject({ 'violated-policies': ['utilization'] });
      }
      expect([await fleetInFlight(fleet), await inFlight(leases)]).toEqual([0, 0]);
      const held = get('/slow', as('normal'));
      await until(() => probe.handled.length === 1);
      expect([await fleetInFlight(fleet), await inFlight(leases)]).toEqual([1, 1]);
      const fleetShed = await get('/', as('normal'));
      expect([fleetShed.status, fleetShed.headers.ratelimit, fleetShed.headers['retry-after']]).toEqual([
        503,
        undefined,
        '1',
      ]);
      expect(fleetShed.body).toMatchObject({ 'violated-policies': ['fleet'] });
      expect(await inFlight(leases)).toBe(1);
      // Three requests were shed and one is in flight: of the quota of 3, only that one is used.
      const critical = await get('/', as('critical'));
      expect([critical.status, critical.headers.ratelimit]).toEqual([200, '"w";r=1;t=10']);
      probe.open();
      expect((await held).headers.ratelimit).toBe('"w";r=2;t=10');
      expect([await fleetInFlight(fleet), await inFlight(leases)]).toEqual([0, 0]);
      expect(probe.handled).toEqual(['/slow', '/']);
    });

    if (subject.routeConfig) {
      it('per-route config: false exempts, a priority alone keeps the plugin shedder and its budget', async () => {
        const fleet = new FleetShedder({ budget: 2, reserve: { critical: 0.5 }, store, random: () => 0 });
        await build({
          guards: { fleetShed: { shedder: fleet, priority: 'critical' } },
          routes: [
            { method: 'GET', path: '/slow', handler: 'wait' },
            { method: 'GET', path: '/health', guards: { fleetShed: false } },
            { method: 'GET', path: '/report', guards: { fleetShed: { priority: 'low' } } },
          ],
        });
        const held = get('/slow');
        await until(() => probe.handled.length === 1);
        expect(await fleetInFlight(fleet)).toBe(1);
        expect((await get('/report')).status).toBe(503);
        expect((await get('/health')).status).toBe(200);
        probe.open();
        expect((await held).status).toBe(200);
        expect((await get('/report')).status).toBe(200);
      });
    }

    it('rejects bad guard options at creation with coded errors', async () => {
      const code = (name: Parameters<Subject['createGuard']>[0], options: unknown) =>
        subject.createGuard(name, options).then(
          () => 'created',
          (error: { code?: string }) => error.code,
        );
      const shedder = new UtilizationShedder({ timer: false });
      const fleet = new FleetShedder({ budget: 10, store });
      expect(await code('concurrencyLimit', {})).toBe('ERR_SLUICE_MISSING_OPTION');
      expect(await code('concurrencyLimit', { limit: 0 })).toBe('ERR_SLUICE_INVALID_OPTION');
      expect(await code('concurrencyLimit', { limit: 2, bogus: 1 })).toBe('ERR_SLUICE_UNKNOWN_OPTION');
      expect(await code('concurrencyLimit', { limit: 2, key: 'token' })).toBe('ERR_SLUICE_INVALID_OPTION');
      expect(
        await code('concurrencyLimit', { limit: 2, limiter: new ConcurrencyLimiter({ limit: 2 }) }),
      ).toBe('ERR_SLUICE_INVALID_OPTION');
      const noLeases: Store = {
        consume: () => [],
        peek: () => [],
        reset: () => undefined,
        shutdown: () => undefined,
      };
      expect(await code('concurrencyLimit', { limit: 2, store: noLeases })).toBe('ERR_SLUICE_UNSUPPORTED');
      expect(await code('fleetShed', { shedder: fleet })).toBe('ERR_SLUICE_MISSING_OPTION');
      expect(await code('fleetShed', { shedder: fleet, priority: 'urgent' })).toBe(
        'ERR_SLUICE_INVALID_OPTION',
      );
      expect(await code('fleetShed', { shedder: fleet, budget: 5, priority: 'low' })).toBe(
        'ERR_SLUICE_INVALID_OPTION',
      );
      expect(await code('fleetShed', { priority: 'low' })).toBe('ERR_SLUICE_MISSING_OPTION');
      expect(await code('utilizationShed', { priority: 'low' })).toBe('ERR_SLUICE_MISSING_OPTION');
      expect(await code('utilizationShed', { shedder: fleet, priority: 'low' })).toBe(
        'ERR_SLUICE_INVALID_OPTION',
      );
      expect(await code('utilizationShed', { shedder, priority: 'low', storeFailure: 'maybe' })).toBe(
        'ERR_SLUICE_INVALID_OPTION',
      );
      expect(await code('utilizationShed', { shedder, priority: 'low' })).toBe('created');
      expect(await code('fleetShed', { shedder: fleet, priority: () => 'low' })).toBe('created');
      expect(await code('concurrencyLimit', { limit: 2 })).toBe('created');
    });
  });
}
