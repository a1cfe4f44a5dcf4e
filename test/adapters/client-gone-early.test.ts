import { once } from 'node:events';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { byToken, fixedWindow, MemoryStore } from '@sluice/core';
import { concurrencyLimit, rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import express from 'express';
import Fastify from 'fastify';
import supertest from 'supertest';
import { describe, expect, it, vi } from 'vitest';

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
