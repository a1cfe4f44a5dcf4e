import {
  byRoute,
  clientAddress,
  combine,
  decide,
  fixedWindow,
  retryAfterSeconds,
  type SluiceWarning,
} from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import express from 'express';
import Fastify from 'fastify';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';

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

describe('retryAfterSeconds', () => {
  it('is at least 1 s, never before the refusing limit resets, absent when no retry can succeed', () => {
    expect(retryAfterSeconds(combine([decide(false, 5, 0, 200, 100, 0, 'a', 'rate-limited')]))).toBe(1);
    expect(retryAfterSeconds(combine([decide(false, 5, 0, 4001, 1000, 0, 'a', 'rate-limited')]))).toBe(5);
    const layered = combine([
      decide(true, 100, 50, 86_400_000, 0, 0, 'daily', undefined),
      decide(false, 5, 0, 2000, 500, 0, 'burst', 'rate-limited'),
    ]);
    expect(retryAfterSeconds(layered)).toBe(2);
    expect(
      retryAfterSeconds(combine([decide(false, 5, 0, 0, -1, 0, 'a', 'cost-exceeds-limit')])),
    ).toBeUndefined();
  });
});

describe('express specifics', () => {
  it('byRoute() in app.use() has no route yet: the limit is skipped and a warning given once', async () => {
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
