/**
 * The traps measured when moving a Fastify app from @fastify/rate-limit (11.2.0) to sluice: the
 * same global and route limits through both, with `fastify.inject`.
 */
import { fixedWindow, MemoryStore } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { describe, expect, it } from 'vitest';

// Imported by a name the compiler does not follow: @fastify/rate-limit's declarations augment
// FastifyInstance with its own `rateLimit`, which would clash with @sluice/fastify's in the
// workspace's one type-checked program. No app loads both.
const PEER = '@fastify/rate-limit';
const fastifyRateLimit: FastifyPluginAsync<{ max: number; timeWindow: number }> = (await import(PEER))
  .default;

/**
 * sluice's store on a clock that stands still: the limits are epoch-aligned 1-minute windows, and
 * requests sent across a minute's turn would start a new one (the count then read one too many).
 */
const still = () => new MemoryStore({ clock: () => 1_700_000_000_000 });

async function admitted(app: FastifyInstance, url: string, requests: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < requests; i++) if ((await app.inject({ url })).statusCode === 200) ok++;
  return ok;
}

/** sluice with a global limit of 2 named `global` and a /search limit of 5 named `route`. */
async function sluiceApp(route: string): Promise<FastifyInstance> {
  const app = Fastify();
  const store = still();
  await app.register(sluice, { name: 'global', algorithm: fixedWindow({ limit: 2, window: '1m' }), store });
  app.get(
    '/search',
    { config: { rateLimit: { name: route, algorithm: fixedWindow({ limit: 5, window: '1m' }), store } } },
    async () => 'ok',
  );
  return app;
}

describe('moving from @fastify/rate-limit', () => {
  it("a route's config replaces the global limit there; in sluice a route's limit adds to it", async () => {
    const theirs = Fastify();
    await theirs.register(fastifyRateLimit, { max: 2, timeWindow: 60_000 });
    theirs.get('/search', { config: { rateLimit: { max: 5, timeWindow: 60_000 } } }, async () => 'ok');
    // Only the route's own 5: the global 2 does not apply to /search.
    expect(await admitted(theirs, '/search', 8)).toBe(5);

    const ours = await sluiceApp('search');
    // Both limits, all-or-nothing: the global 2 still binds.
    expect(await admitted(ours, '/search', 8)).toBe(2);

    // To replace the global limit on a route, as @fastify/rate-limit does, give it the global's name.
    const replaced = await sluiceApp('global');
    expect(await admitted(replaced, '/search', 8)).toBe(5);
    await Promise.all([theirs.close(), ours.close(), replaced.close()]);
  });

  it('the default headers and body differ', async () => {
    const theirs = Fastify();
    await theirs.register(fastifyRateLimit, { max: 1, timeWindow: 60_000 });
    theirs.get('/', async () => 'ok');
    const ours = Fastify();
    await ours.register(sluice, {
      name: 'global',
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      store: still(),
    });
    ours.get('/', async () => 'ok');
    await theirs.inject({ url: '/' });
    await ours.inject({ url: '/' });
    const [a, b] = [await theirs.inject({ url: '/' }), await ours.inject({ url: '/' })];
    expect([a.statusCode, b.statusCode]).toEqual([429, 429]);
    expect(a.headers['x-ratelimit-limit']).toBe('1');
    expect(a.headers.ratelimit).toBeUndefined();
    expect(a.json()).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(b.headers['x-ratelimit-limit']).toBeUndefined();
    expect(b.headers.ratelimit).toMatch(/^"global";r=0;t=\d+$/);
    expect(b.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(b.json()).toMatchObject({ status: 429, 'violated-policies': ['global'] });
    await Promise.all([theirs.close(), ours.close()]);
  });
});
