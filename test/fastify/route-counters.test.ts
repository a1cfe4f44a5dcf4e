/**
 * Issue 32 §8: a route limit that replaces the global limit by its name counted with every other
 * route doing the same (and with the global limit itself), so `/login` and `/reset`, 2 each,
 * admitted 2 together; and a GET's automatic HEAD route shared or doubled its counter.
 * @fastify/rate-limit counts a route's own limit per route (method and URL), the global limit
 * across routes.
 */
import { fixedWindow, MemoryStore } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

// A clock that stands still: every request of a test falls in one window.
const still = () => new MemoryStore({ clock: () => Date.UTC(2026, 0, 1, 12, 0, 0) });
const two = { name: 'global', algorithm: fixedWindow({ limit: 2, window: '1m' }) };

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function statuses(requests: [method: 'GET' | 'HEAD' | 'POST', url: string][]): Promise<number[]> {
  const answers: number[] = [];
  for (const [method, url] of requests) answers.push((await app!.inject({ method, url })).statusCode);
  return answers;
}

describe('@sluice/fastify: per-route counters (issue 32 §8)', () => {
  it('regression (issue 32 §8): two routes replacing the global limit by its name count apart', async () => {
    app = Fastify();
    await app.register(sluice, {
      name: 'global',
      algorithm: fixedWindow({ limit: 10, window: '1m' }),
      store: still(),
    });
    app.post('/login', { config: { rateLimit: two } }, async () => 'ok');
    app.post('/reset', { config: { rateLimit: two } }, async () => 'ok');
    app.get('/', async () => 'ok');
    expect(
      await statuses([
        ['POST', '/login'],
        ['POST', '/login'],
        ['POST', '/reset'],
        ['POST', '/reset'],
        ['POST', '/login'],
        ['POST', '/reset'],
      ]),
    ).toEqual([200, 200, 200, 200, 429, 429]);
    // The global limit kept its own count: the routes' requests were not taken from it.
    expect((await app.inject({ url: '/' })).headers.ratelimit).toMatch(/^"global";r=9;/);
  });

  it('the global limit itself still counts across routes', async () => {
    app = Fastify();
    await app.register(sluice, { ...two, store: still() });
    app.get('/a', async () => 'ok');
    app.get('/b', async () => 'ok');
    expect(
      await statuses([
        ['GET', '/a'],
        ['GET', '/b'],
        ['GET', '/a'],
      ]),
    ).toEqual([200, 200, 429]);
  });

  it('a limit of another name added by two routes is shared by its name, as documented', async () => {
    app = Fastify();
    await app.register(sluice, { global: false, store: still() });
    const shared = { name: 'auth', algorithm: fixedWindow({ limit: 2, window: '1m' }) };
    app.post('/login', { config: { rateLimit: shared } }, async () => 'ok');
    app.post('/reset', { config: { rateLimit: shared } }, async () => 'ok');
    expect(
      await statuses([
        ['POST', '/login'],
        ['POST', '/reset'],
        ['POST', '/login'],
      ]),
    ).toEqual([200, 200, 429]);
  });

  it("regression (issue 32 §8): a GET and its automatic HEAD count once per request; the global limit is shared, a route's own limit is the route's", async () => {
    app = Fastify({ exposeHeadRoutes: true });
    await app.register(sluice, { ...two, store: still() });
    app.get('/', async () => 'ok');
    // The global limit: GET and HEAD draw on the one counter, one unit each.
    expect(
      await statuses([
        ['GET', '/'],
        ['HEAD', '/'],
        ['GET', '/'],
      ]),
    ).toEqual([200, 200, 429]);
  });

  it("regression (issue 32 §8): a GET route's own limit and its automatic HEAD route's count apart, one unit a request", async () => {
    app = Fastify({ exposeHeadRoutes: true });
    await app.register(sluice, {
      name: 'global',
      algorithm: fixedWindow({ limit: 10, window: '1m' }),
      store: still(),
    });
    app.get('/doc', { config: { rateLimit: two } }, async () => 'ok');
    const head = await app.inject({ method: 'HEAD', url: '/doc' });
    expect(head.statusCode).toBe(200);
    expect(head.headers.ratelimit).toMatch(/^"global";r=1;/);
    expect(
      await statuses([
        ['GET', '/doc'],
        ['GET', '/doc'],
        ['GET', '/doc'],
        ['HEAD', '/doc'],
        ['HEAD', '/doc'],
      ]),
    ).toEqual([200, 200, 429, 200, 429]);
  });
});
