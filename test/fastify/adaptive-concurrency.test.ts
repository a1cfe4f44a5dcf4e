import { AdaptiveConcurrency, aimd } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';

/** AIMD whose windows never close: the limit stays `limit`. */
const fixed = (limit: number) => aimd({ initialLimit: limit, minLimit: 1, minWindow: '1h', maxWindow: '1h' });

async function until(done: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!done() && performance.now() < deadline) await new Promise((r) => setImmediate(r));
  expect(done()).toBe(true);
}

describe('fastify: adaptiveConcurrency', () => {
  it('app.adaptiveConcurrency() in preHandler reads what onRequest hooks set (the priority from request.user)', async () => {
    const app = Fastify();
    app.decorateRequest('user', undefined);
    app.addHook('onRequest', async (request) => {
      (request as FastifyRequest & { user?: string }).user = request.headers['x-user'] as string;
    });
    await app.register(sluice, { global: false });
    const limiter = new AdaptiveConcurrency({
      controller: fixed(2),
      partitions: { critical: 0.5, low: 0.5 },
    });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let entered = 0;
    const hook = app.adaptiveConcurrency({
      limiter,
      hook: 'preHandler',
      priority: (request) =>
        (request as FastifyRequest & { user?: string }).user === 'payer' ? 'critical' : 'low',
    });
    app.get('/slow', { preHandler: hook }, async () => {
      entered++;
      await gate;
      return 'ok';
    });
    const held = [app.inject({ url: '/slow', headers: { 'x-user': 'payer' } })];
    await until(() => entered === 1);
    expect(limiter.partitions()).toMatchObject({ critical: { inFlight: 1 }, low: { inFlight: 0 } });
    held.push(app.inject({ url: '/slow', headers: { 'x-user': 'browser' } }));
    await until(() => entered === 2);
    expect(limiter.partitions()).toMatchObject({ critical: { inFlight: 1 }, low: { inFlight: 1 } });
    const refused = await app.inject({ url: '/slow', headers: { 'x-user': 'browser' } });
    expect(refused.statusCode).toBe(503);
    open();
    expect((await Promise.all(held)).map((r) => r.statusCode)).toEqual([200, 200]);
    expect(limiter.inFlight).toBe(0);
    await app.close();
  });

  it("a route's config without an engine of its own shares the plugin's limiter; false exempts the route", async () => {
    const app = Fastify();
    const limiter = new AdaptiveConcurrency({
      controller: fixed(2),
      partitions: { critical: 0.5, low: 0.5 },
    });
    await app.register(sluice, { global: false, adaptiveConcurrency: { limiter, priority: 'critical' } });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let entered = 0;
    app.get('/pay', async () => {
      entered++;
      await gate;
      return 'ok';
    });
    app.get('/reports', { config: { adaptiveConcurrency: { priority: 'low' } } }, async () => 'ok');
    app.get('/health', { config: { adaptiveConcurrency: false } }, async () => 'ok');
    // Low-priority traffic has not asked yet: critical borrows its share, and the limit (2) is full.
    const held = [app.inject('/pay'), app.inject('/pay')];
    await until(() => entered === 2);
    // The route's low-priority request is refused by the same limiter.
    expect((await app.inject('/reports')).statusCode).toBe(503);
    expect((await app.inject('/health')).statusCode).toBe(200);
    open();
    expect((await Promise.all(held)).map((r) => r.statusCode)).toEqual([200, 200]);
    expect((await app.inject('/reports')).statusCode).toBe(200);
    await app.close();
  });
});
