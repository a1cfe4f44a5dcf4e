import { fixedWindow, MemoryStore } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

// Issue 25 §3: `app.register(sluice)` limits every route with the default limit; `global: false`
// is the plugin that limits only the routes with their own config and app.rateLimit() hooks.

// A clock that stands still: the requests of a test fall in one window.
const store = () => new MemoryStore({ clock: () => Date.UTC(2026, 0, 1, 12, 0, 0) });
const login = { name: 'login', algorithm: fixedWindow({ limit: 5, window: '15m' }) };

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function policies(paths: string[]): Promise<(string | undefined)[]> {
  const answers = [];
  for (const url of paths) answers.push((await app!.inject({ url })).headers['ratelimit-policy'] as string);
  return answers;
}

describe('@sluice/fastify: global', () => {
  it('default (true): every route gets the default limit; a route config adds its limits to it', async () => {
    app = Fastify();
    await app.register(sluice, { store: store() });
    app.get('/', async () => 'ok');
    app.get('/login', { config: { rateLimit: login } }, async () => 'ok');
    app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
    expect(await policies(['/', '/login', '/health'])).toEqual([
      '"default";q=100;w=60',
      '"default";q=100;w=60, "login";q=5;w=900',
      undefined,
    ]);
  });

  it('regression (firstrun review): under global, a route config with only a key re-keys the plugin limits for that route (it was ignored in silence); a name alone is refused', async () => {
    app = Fastify();
    await app.register(sluice, {
      store: store(),
      algorithm: fixedWindow({ limit: 2, window: '1m' }),
      name: 'api',
      key: () => 'everyone',
    });
    app.get('/', async () => 'ok');
    // Per tenant on this route: the header names the tenant's own count, not everyone's.
    app.get(
      '/tenant',
      { config: { rateLimit: { key: (req) => String(req.headers['x-tenant']) } } },
      async () => 'ok',
    );
    const statuses = async (url: string, tenant: string, n: number) => {
      const out = [];
      for (let i = 0; i < n; i++)
        out.push((await app!.inject({ url, headers: { 'x-tenant': tenant } })).statusCode);
      return out;
    };
    expect(await statuses('/tenant', 'a', 3)).toEqual([200, 200, 429]);
    expect(await statuses('/tenant', 'b', 2)).toEqual([200, 200]);
    // The plugin's own key still counts everyone elsewhere, apart from the tenants' counts.
    expect(await statuses('/', 'a', 3)).toEqual([200, 200, 429]);
    const named = Fastify();
    await named.register(sluice, { store: store() });
    // Refused as the route is declared.
    expect(() => named.get('/', { config: { rateLimit: { name: 'nameless' } } }, async () => 'ok')).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_MISSING_OPTION' }),
    );
    await named.close();
  });

  it('false: only routes with their own config are limited; `{}` and a key alone get the default limit', async () => {
    app = Fastify();
    await app.register(sluice, { global: false, store: store() });
    app.get('/', async () => 'ok');
    app.get('/login', { config: { rateLimit: login } }, async () => 'ok');
    app.get('/own', { config: { rateLimit: {} } }, async () => 'ok');
    app.get('/keyed', { config: { rateLimit: { key: () => 'one' } } }, async () => 'ok');
    app.get('/hook', { onRequest: app.rateLimit({}) }, async () => 'ok');
    expect(await policies(['/', '/login', '/own', '/keyed', '/hook'])).toEqual([
      undefined,
      '"login";q=5;w=900',
      '"default";q=100;w=60',
      '"default";q=100;w=60',
      '"default";q=100;w=60',
    ]);
    await expect(app.rateLimits.peek({} as never)).rejects.toMatchObject({
      code: 'ERR_SLUICE_MISSING_OPTION',
    });
  });

  it('false with a limit of its own is refused (ERR_SLUICE_INVALID_OPTION), naming it', async () => {
    for (const limits of [
      { algorithm: login.algorithm },
      { limits: [login] },
      { key: () => 'one' },
      { name: 'x' },
    ]) {
      app = Fastify();
      await expect(app.register(sluice, { global: false, ...limits })).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_OPTION',
        option: 'global',
        message: expect.stringContaining(Object.keys(limits)[0]!),
      });
      await app.close();
      app = undefined;
    }
  });

  it('global must be true or false', async () => {
    app = Fastify();
    await expect(app.register(sluice, { global: 'no' as never })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      option: 'global',
      value: 'no',
    });
  });
});
