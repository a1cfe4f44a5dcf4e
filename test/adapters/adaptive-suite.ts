import { request as httpRequest } from 'node:http';
import {
  AdaptiveConcurrency,
  type AdaptiveConcurrencyOptions,
  aimd,
  type Decision,
  ErrorCode,
  type LimitController,
} from '@sluice/core';
import type { HttpAdaptiveConcurrencyOptions } from '@sluice/core/adapter';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEMPORARY_REDUCED_CAPACITY } from '../../packages/core/src/http/problem.js';
import { recording } from '../core/shedding/adaptive-helpers.js';
import { type AppSpec, type Guards, Probe, type Reply, type Subject, type TestApp } from './harness.js';

/**
 * Lets the event loop turn (I/O included) until `done()` holds. The bound is wall-clock time, not
 * a count of turns; nothing waits on a timer for its result: the deadline turns a hang into a failure.
 */
async function until(done: () => boolean, withinMs = 10_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    if (done()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (!done()) throw new Error(`condition not reached within ${withinMs} ms`);
}

const priorityHeader = (req: unknown) =>
  (req as { headers: Record<string, string | undefined> }).headers['x-priority'] ?? 'low';

/**
 * The adaptive concurrency limit through each adapter, app-wide and per route: admission and the
 * 503 refusal, the latency each admitted request reports (to its response's end, on the limiter's
 * clock, which the test sets), drops (a status the app marks, a client gone), partitions, and the
 * decision hooks. Requests are held in flight by handlers waiting on `Probe`, never by timers.
 */
export function adaptiveSuite(subject: Subject): void {
  describe(`${subject.name}: adaptiveConcurrency`, () => {
    let now: number;
    let app: TestApp | undefined;
    let probe: Probe;
    const clock = () => now;

    beforeEach(() => {
      now = 0;
      probe = new Probe();
    });
    afterEach(async () => {
      probe.open();
      await app?.close();
      app = undefined;
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
    const limiterOf = (controller: LimitController, extra: AdaptiveConcurrencyOptions = {}) =>
      new AdaptiveConcurrency({ controller, clock, random: () => 0.5, ...extra });
    const guard = (options: HttpAdaptiveConcurrencyOptions<unknown>): Guards => ({
      adaptiveConcurrency: options,
    });
    const start = (replies: Reply[], path: string, headers?: Record<string, string>) =>
      get(path, headers).then((reply) => {
        replies.push(reply);
        return reply;
      });

    it('admits up to the limit, refuses past it with 503, a jittered Retry-After and a problem body, and the refused request never runs', async () => {
      const limiter = limiterOf(recording(2));
      await build({ guards: guard({ limiter }), routes });
      const replies: Reply[] = [];
      const held = [start(replies, '/slow'), start(replies, '/slow')];
      await until(() => probe.handled.length === 2);
      expect(limiter.inFlight).toBe(2);
      const refused = await get('/');
      // retryAfter = 1 s + 0.5 × (5 s − 1 s) = 3 s, drawn from `random`
      expect([refused.status, refused.headers['retry-after']]).toEqual([503, '3']);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body).toEqual({
        type: TEMPORARY_REDUCED_CAPACITY,
        title: 'Request cannot be satisfied due to temporary server capacity constraints',
        status: 503,
        detail: 'The service is shedding load to protect itself. Retry in 3 s.',
        'violated-policies': ['adaptive'],
      });
      expect(probe.handled).toEqual(['/slow', '/slow']);
      probe.open();
      expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
      await until(() => limiter.inFlight === 0);
      expect((await get('/')).status).toBe(200);
    });

    it("reports each admitted request's latency, from its arrival to its response's end, on the limiter's clock", async () => {
      const controller = recording(10);
      const limiter = limiterOf(controller);
      await build({ guards: guard({ limiter }), routes });
      now = 100;
      const slow = get('/slow');
      await until(() => probe.handled.length === 1);
      now = 250;
      probe.open();
      expect((await slow).status).toBe(200);
      await until(() => controller.samples.length === 1);
      expect(controller.samples).toEqual([{ start: 100, end: 250, inFlight: 1, dropped: false }]);
    });

    it('tells the controller what `outcome` makes of the status: a 500 is a latency by default, a drop when the app marks it so', async () => {
      const plain = recording(10);
      await build({ guards: guard({ limiter: limiterOf(plain) }), routes });
      expect((await get('/fail')).status).toBe(500);
      await until(() => plain.samples.length === 1);
      expect(plain.samples[0]!.dropped).toBe(false);
      await app!.close();

      const marked = recording(10);
      const statuses: number[] = [];
      const outcome = (status: number) => {
        statuses.push(status);
        return status >= 500 ? ('drop' as const) : ('latency' as const);
      };
      await build({ guards: guard({ limiter: limiterOf(marked), outcome }), routes });
      expect((await get('/fail')).status).toBe(500);
      expect((await get('/')).status).toBe(200);
      await until(() => marked.samples.length === 2);
      expect(statuses).toEqual([500, 200]);
      expect(marked.samples.map((s) => s.dropped)).toEqual([true, false]);
    });

    it("an outcome of 'ignore' frees the slot and tells the controller nothing", async () => {
      const controller = recording(1);
      await build({ guards: guard({ limiter: limiterOf(controller), outcome: () => 'ignore' }), routes });
      for (let i = 0; i < 3; i++) expect((await get('/')).status).toBe(200);
      expect(controller.samples).toEqual([]);
    });

    it('a client that leaves mid-request frees its slot as a drop (clientGone: ignore: as nothing)', async () => {
      for (const clientGone of ['drop', 'ignore'] as const) {
        probe = new Probe();
        const controller = recording(1);
        const limiter = limiterOf(controller);
        await build({ guards: guard({ limiter, clientGone }), routes });
        const base = await app!.listen();
        const leaving = httpRequest(`${base}/slow`);
        leaving.on('error', () => undefined);
        leaving.end();
        await until(() => probe.handled.length === 1);
        expect(limiter.inFlight).toBe(1);
        now = 40;
        leaving.destroy();
        // The handler is still waiting: only the disconnect can have freed the slot.
        await until(() => limiter.inFlight === 0);
        expect(controller.samples).toEqual(
          clientGone === 'drop' ? [{ start: 0, end: 40, inFlight: 1, dropped: true }] : [],
        );
        expect((await fetch(`${base}/`)).status).toBe(200);
        probe.open();
        await app!.close();
        app = undefined;
        now = 0;
      }
    });

    it("partitions: a partition's guaranteed share is kept for it while it has demand; a lower one borrows only what is left", async () => {
      const limiter = limiterOf(recording(2), { partitions: { critical: 0.5, low: 0.5 } });
      await build({ guards: guard({ limiter, priority: priorityHeader }), routes });
      // Critical traffic asked a moment ago: its share (1 of 2) is not lent.
      expect((await get('/', as('critical'))).status).toBe(200);
      const replies: Reply[] = [];
      const held = [start(replies, '/slow', as('low'))];
      await until(() => probe.handled.length === 2);
      const refused = await get('/slow', as('low'));
      expect(refused.status).toBe(503);
      held.push(start(replies, '/slow', as('critical')));
      await until(() => probe.handled.length === 3);
      expect(limiter.partitions()).toMatchObject({ critical: { inFlight: 1 }, low: { inFlight: 1 } });
      probe.open();
      await Promise.all(held);
    });

    it('a fixed priority suits a route of its own, on the app-wide limiter', async () => {
      const limiter = limiterOf(recording(2), { partitions: { critical: 0.5, low: 0.5 } });
      await build({
        routes: [
          { method: 'GET', path: '/pay', handler: 'wait', guards: guard({ limiter, priority: 'critical' }) },
          { method: 'GET', path: '/report', handler: 'wait', guards: guard({ limiter, priority: 'low' }) },
          { method: 'GET', path: '/free', handler: 'ok' },
        ],
      });
      const held = [get('/pay'), get('/report')];
      await until(() => probe.handled.length === 2);
      expect(limiter.partitions()).toMatchObject({ critical: { inFlight: 1 }, low: { inFlight: 1 } });
      expect((await get('/report')).status).toBe(503);
      // A route without the guard is not limited.
      expect((await get('/free')).status).toBe(200);
      probe.open();
      expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    });

    it('calls onDecision for every decision and onLimited for refusals, onDecision first', async () => {
      const calls: string[] = [];
      const tell = (hook: string) => (_req: unknown, decision: Decision) => {
        calls.push(`${hook}:${decision.allowed ? 'allowed' : decision.reason}:${decision.limit}`);
      };
      const limiter = limiterOf(recording(1));
      await build({
        guards: guard({ limiter, onDecision: tell('decision'), onLimited: tell('limited') }),
        routes,
      });
      const held = get('/slow');
      await until(() => probe.handled.length === 1);
      expect((await get('/')).status).toBe(503);
      probe.open();
      await held;
      expect(calls).toEqual(['decision:allowed:1', 'decision:shed:1', 'limited:shed:1']);
    });

    it('the limit follows the controller: drops the app marks shrink it', async () => {
      // AIMD deciding on every sample: ×0.9 (floored) on a drop.
      const limiter = limiterOf(
        aimd({ initialLimit: 10, minLimit: 1, windowSamples: 1, minWindow: 1, maxWindow: 1 }),
      );
      await build({ guards: guard({ limiter, outcome: () => 'drop' }), routes });
      expect(limiter.limit).toBe(10);
      for (let i = 1; i <= 4; i++) {
        now = i * 10;
        expect((await get('/')).status).toBe(200);
      }
      await until(() => limiter.inFlight === 0);
      // A 1 ms window closes on the first sample past its end: four drops close three windows.
      expect(limiter.limit).toBe(7); // 10 → 9 → 8 → 7
    });

    it('refuses bad options at creation with coded errors naming the option', async () => {
      const limiter = new AdaptiveConcurrency({ partitions: { critical: 0.8, low: 0.2 } });
      const rejects = async (options: unknown, code: string, option: string) => {
        const error = await subject.createGuard('adaptiveConcurrency', options).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, option).toMatchObject({ code });
        expect((error as Error).message).toContain(option);
      };
      await rejects({ limiter }, ErrorCode.MISSING_OPTION, 'priority');
      await rejects({ limiter, priority: 'urgent' }, ErrorCode.INVALID_OPTION, 'priority');
      await rejects({ priority: 'low' }, ErrorCode.INVALID_OPTION, 'priority needs partitions');
      await rejects({ limiter, controller: aimd(), priority: 'low' }, ErrorCode.INVALID_OPTION, 'controller');
      await rejects({ limiter: {}, priority: 'low' }, ErrorCode.INVALID_OPTION, 'limiter');
      await rejects({ clientGone: 'wait' }, ErrorCode.INVALID_OPTION, 'clientGone');
      await rejects({ limitt: 3 }, ErrorCode.UNKNOWN_OPTION, 'limitt');
      await expect(subject.createGuard('adaptiveConcurrency', {})).resolves.toBeUndefined();
    });
  });
}
