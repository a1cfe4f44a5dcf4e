import { fixedWindow, MemoryStore } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

describe('fastify specifics', () => {
  it("hook: 'preHandler' runs after the app's onRequest hooks; a bad route config fails at registration", async () => {
    const app = Fastify();
    const seen: string[] = [];
    app.addHook('onRequest', async () => {
      seen.push('onRequest');
    });
    await app.register(sluice, {
      name: 'p',
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      // A clock that stands still: the two requests must fall in one epoch-aligned minute.
      store: new MemoryStore({ clock: () => 1_700_000_000_000 }),
      hook: 'preHandler',
    });
    app.get('/', async () => 'ok');
    const first = await app.inject('/');
    const second = await app.inject('/');
    expect([first.statusCode, second.statusCode]).toEqual([200, 429]);
    expect(seen).toEqual(['onRequest', 'onRequest']);
    await app.close();
    const other = Fastify();
    await other.register(sluice, { global: false });
    expect(() =>
      other.get(
        '/bad',
        {
          config: {
            rateLimit: {
              limits: [{ name: 'x', algorithm: fixedWindow({ limit: 1, window: '1m' }) }],
              cost: -1,
            },
          },
        },
        async () => 'x',
      ),
    ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }));
    await other.close();
  });

  it('Fastify app.concurrencyLimit() is a route hook; a guard in preHandler runs after onRequest hooks', async () => {
    const app = Fastify();
    const seen: string[] = [];
    app.addHook('onRequest', async () => {
      seen.push('onRequest');
    });
    await app.register(sluice, { global: false });
    let entered = false;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    app.get(
      '/slow',
      { preHandler: app.concurrencyLimit({ limit: 1, key: () => 'one', hook: 'preHandler' }) },
      async () => {
        entered = true;
        await gate;
        return 'ok';
      },
    );
    app.get('/fast', { preHandler: app.concurrencyLimit({ limit: 1, key: () => 'one' }) }, async () => 'ok');
    const held = app.inject('/slow');
    for (let i = 0; i < 1000 && !entered; i++) await new Promise((r) => setImmediate(r));
    expect(entered).toBe(true);
    // Separate hooks from separate decorator calls share the plugin's store and the default name.
    const refused = await app.inject('/fast');
    expect([refused.statusCode, refused.headers['retry-after']]).toEqual([429, '1']);
    open();
    expect((await held).statusCode).toBe(200);
    expect((await app.inject('/fast')).statusCode).toBe(200);
    expect(seen).toEqual(['onRequest', 'onRequest', 'onRequest']);
    await app.close();
  });
});
