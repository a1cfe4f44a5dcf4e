import { once } from 'node:events';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  byRoute,
  byToken,
  fixedWindow,
  MemoryStore,
  type SluiceWarning,
  UtilizationShedder,
} from '@sluice/core';
import { combine, decide } from '@sluice/core/adapter';
import { concurrencyLimit, fleetShed, rateLimit, utilizationShed } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import express from 'express';
import Fastify from 'fastify';
import supertest from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { resetSeconds } from '../../packages/core/src/http/headers.js';
import { clientAddress } from '../../packages/core/src/http/ip.js';
import { retryAfterSeconds } from '../../packages/core/src/http/problem.js';
import { forgetWarnings } from '../setup/process-warnings.js';

describe('clientAddress', () => {
  it('groups IPv6 by prefix, unmaps IPv4-mapped addresses, rejects garbage', () => {
    expect(clientAddress('203.0.113.7', 56)).toBe('203.0.113.7');
    expect(clientAddress('::ffff:203.0.113.7', 56)).toBe('203.0.113.7');
    expect(clientAddress('::ffff:cb00:7107', 56)).toBe('203.0.113.7');
    expect(clientAddress('2001:db8:abcd:12ff:1::1', 56)).toBe('2001:db8:abcd:1200::/56');
    expect(clientAddress('2001:db8:abcd:12ff:1::1', 48)).toBe('2001:db8:abcd::/48');
    expect(clientAddress('2001:db8:abcd:12ff:1::1', 64)).toBe('2001:db8:abcd:12ff::/64');
    expect(clientAddress('not:an:address', 56)).toBeUndefined();
  });
});

describe('retryAfterSeconds and resetSeconds', () => {
  it('Retry-After is the latest retry time of the refusing limits, at least 1 s, and their reset says the same', () => {
    const short = decide(false, 5, 0, 200, 100, 0, 'a', 'rate-limited');
    expect([retryAfterSeconds(combine([short])), resetSeconds(short)]).toEqual([1, 1]);
    // A token bucket with its next token in 1 s and full in 4.001 s: retry in 1 s, not 5.
    const bucket = decide(false, 5, 0, 4001, 1000, 0, 'a', 'rate-limited');
    expect([retryAfterSeconds(combine([bucket])), resetSeconds(bucket)]).toEqual([1, 1]);
    const daily = decide(true, 100, 50, 86_400_000, 0, 0, 'daily', undefined);
    const burst = decide(false, 5, 0, 2000, 1500, 0, 'burst', 'rate-limited');
    expect(retryAfterSeconds(combine([daily, burst]))).toBe(2);
    // An admitting limit keeps its reset; the refusing one reports its retry time.
    expect([resetSeconds(daily), resetSeconds(burst)]).toEqual([86_400, 2]);
    const later = decide(false, 9, 0, 9000, 7001, 0, 'later', 'rate-limited');
    expect(retryAfterSeconds(combine([burst, later]))).toBe(8);
    // A decision of its own (a shedder's, a lease's): its retryAfter.
    expect(retryAfterSeconds(decide(false, 0, 0, 0, 4200, 0, 'fleet', 'shed'))).toBe(5);
    const never = decide(false, 5, 0, 3000, -1, 0, 'a', 'cost-exceeds-limit');
    expect(retryAfterSeconds(combine([never]))).toBeUndefined();
    expect(resetSeconds(never)).toBe(3);
  });
});

describe('express specifics', () => {
  it('byRoute() in app.use() has no route yet: the limit is skipped and a warning given once', async () => {
    forgetWarnings();
    const warnings: SluiceWarning[] = [];
    const app = express();
    app.use(
      rateLimit({
        name: 'r',
        key: byRoute(),
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onWarning: (w) => warnings.push(w),
      }),
    );
    app.get('/x', (_req, res) => {
      res.send('ok');
    });
    for (let i = 0; i < 3; i++) {
      const response = await supertest(app).get('/x');
      expect([response.status, response.headers.ratelimit]).toEqual([200, undefined]);
    }
    expect(warnings.map((w) => w.code)).toEqual(['SLUICE_ROUTE_UNKNOWN']);
  });
});

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
      hook: 'preHandler',
    });
    app.get('/', async () => 'ok');
    const first = await app.inject('/');
    const second = await app.inject('/');
    expect([first.statusCode, second.statusCode]).toEqual([200, 429]);
    expect(seen).toEqual(['onRequest', 'onRequest']);
    await app.close();
    const other = Fastify();
    await other.register(sluice, {});
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
});

describe('guards: decorators and names', () => {
  it('Fastify app.concurrencyLimit() is a route hook; a guard in preHandler runs after onRequest hooks', async () => {
    const app = Fastify();
    const seen: string[] = [];
    app.addHook('onRequest', async () => {
      seen.push('onRequest');
    });
    await app.register(sluice, {});
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

  it('Express guard middlewares are named', () => {
    const shedder = new UtilizationShedder({ timer: false });
    expect(
      [
        concurrencyLimit({ limit: 1 }),
        fleetShed({ budget: 5, priority: 'low' }),
        utilizationShed({ shedder, priority: 'low' }),
      ].map((m) => m.name),
    ).toEqual(['sluiceConcurrencyLimit', 'sluiceFleetShed', 'sluiceUtilizationShed']);
  });
});

describe('a client gone before the middleware runs', () => {
  // An earlier middleware (or hook) is slow; the client leaves meanwhile. Its request must take no
  // lease (one that would never be released: the response's 'close' has already happened) and no
  // rate-limit unit, and never reach the handler. Keyed by token: a departed request has no
  // address left to key by.
  const TOKEN = { authorization: 'Bearer abc' };
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { opened, open };
  };
  const leave = (url: string) => {
    const request = httpRequest(url, { agent: false, headers: TOKEN });
    request.on('error', () => undefined);
    request.end();
    return request;
  };
  const connections = (server: Server) =>
    new Promise<number>((resolve, reject) => {
      server.getConnections((error, count) => (error ? reject(error) : resolve(count)));
    });

  const scenario = async (url: string, server: Server, slow: { reached: number; open: () => void }) => {
    const leaving = leave(`${url}/`);
    await vi.waitFor(() => expect(slow.reached).toBe(1), { timeout: 10_000 });
    leaving.destroy();
    await vi.waitFor(async () => expect(await connections(server)).toBe(0), { timeout: 10_000 });
    slow.open();
  };

  it('express: no lease, no unit, no handler', async () => {
    const { opened, open } = gate();
    const slow = { reached: 0, open };
    const handled: string[] = [];
    const app = express();
    app.use((_req, _res, next) => {
      slow.reached++;
      void opened.then(() => next());
    });
    app.use(concurrencyLimit({ limit: 1, key: byToken() }));
    app.use(
      rateLimit({
        name: 'w',
        key: byToken(),
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        store: new MemoryStore({ clock: () => 0 }),
      }),
    );
    app.get('/', (_req, res) => {
      handled.push('/');
      res.json({ ok: true });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      await scenario(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, slow);
      // Let the departed request run through every middleware that would still run it.
      await new Promise((resolve) => setImmediate(resolve));
      const next = await supertest(app).get('/').set(TOKEN);
      expect([next.status, next.headers.ratelimit]).toEqual([200, '"w";r=0;t=60']);
      expect(handled).toEqual(['/']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('fastify: no lease, no unit, no handler', async () => {
    const { opened, open } = gate();
    const slow = { reached: 0, open };
    const handled: string[] = [];
    const app = Fastify();
    app.addHook('onRequest', async () => {
      slow.reached++;
      await opened;
    });
    await app.register(sluice, {
      name: 'w',
      key: byToken(),
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      store: new MemoryStore({ clock: () => 0 }),
      concurrencyLimit: { limit: 1, key: byToken() },
    });
    app.get('/', async () => {
      handled.push('/');
      return { ok: true };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      await scenario(url, app.server, slow);
      await new Promise((resolve) => setImmediate(resolve));
      const next = await app.inject({ method: 'GET', url: '/', headers: TOKEN });
      expect([next.statusCode, next.headers.ratelimit]).toEqual([200, '"w";r=0;t=60']);
      expect(handled).toEqual(['/']);
    } finally {
      await app.close();
    }
  });
});
