// Type tests of the adapters' public API, as apps write it (each package's README): checked by
// `pnpm test` (vitest's typecheck mode, project `types`) and `pnpm typecheck`; never run.

import type { CanActivate } from '@nestjs/common';
import {
  byIp,
  concurrencyLimit,
  type Decision,
  type ExpressRateLimitMiddleware,
  type ExpressRateLimitOptions,
  type ExpressRateLimitStore,
  fixedWindow,
  fromExpressRateLimit,
  type RateLimitControl,
  type RateLimitMiddleware,
  rateLimit,
} from '@sluice/express';
import { type SluiceOptions, sluice } from '@sluice/fastify';
import * as hono from '@sluice/hono';
import * as koa from '@sluice/koa';
import * as nest from '@sluice/nestjs';
import express, { type Request, type RequestHandler } from 'express';
import type { MemoryStore as TheirMemoryStore, Options as TheirOptions } from 'express-rate-limit';
import Fastify, { type FastifyRequest } from 'fastify';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import Koa, { type Context as KoaContext, type Middleware } from 'koa';
import { describe, expectTypeOf, test } from 'vitest';

const algorithm = fixedWindow({ limit: 100, window: '15m' });

describe('@sluice/express', () => {
  test('rateLimit() is a request handler with peek, reset and settle', () => {
    const limiter = rateLimit({ algorithm, key: byIp() });
    expectTypeOf(limiter).toEqualTypeOf<RateLimitMiddleware>();
    expectTypeOf(limiter).toMatchTypeOf<RequestHandler>();
    expectTypeOf(limiter).toMatchTypeOf<RateLimitControl<Request>>();
    expectTypeOf(limiter.peek).returns.resolves.toEqualTypeOf<Decision | undefined>();
    express().use(limiter, concurrencyLimit({ limit: 10 }));
    // @ts-expect-error an unknown option
    rateLimit({ algorithm, windowMs: 60_000 });
  });

  test('fromExpressRateLimit takes what express-rate-limit takes, and gives its middleware', () => {
    // An app's typed options object and its stores move over without a cast.
    expectTypeOf<Partial<TheirOptions>>().toMatchTypeOf<ExpressRateLimitOptions>();
    expectTypeOf<TheirMemoryStore>().toMatchTypeOf<ExpressRateLimitStore>();
    const limiter = rateLimit(
      fromExpressRateLimit({ limit: async (_req, res) => (res.locals.pro ? 100 : 10) }),
    );
    expectTypeOf(limiter).toEqualTypeOf<ExpressRateLimitMiddleware>();
    expectTypeOf(limiter).toMatchTypeOf<RequestHandler>();
    expectTypeOf(limiter.resetKey).parameter(0).toEqualTypeOf<string>();
    rateLimit(fromExpressRateLimit());
    // @ts-expect-error an unknown option
    fromExpressRateLimit({ limt: 5 });
  });

  test("req.rateLimit is the last sluice middleware's Decision", () => {
    expectTypeOf<Request['rateLimit']>().toEqualTypeOf<Decision | undefined>();
  });
});

describe('@sluice/fastify', () => {
  test('the plugin registers with its options; routes add, override or exempt', async () => {
    const app = Fastify();
    await app.register(sluice, { algorithm, key: byIp() });
    app.get('/exempt', { config: { rateLimit: false } }, async () => 'ok');
    app.get('/own', { config: { rateLimit: { name: 'own', algorithm } } }, async () => 'ok');
    expectTypeOf(app.rateLimits).toEqualTypeOf<RateLimitControl<FastifyRequest>>();
    expectTypeOf(app.rateLimit({ algorithm }).settle).parameters.toEqualTypeOf<[FastifyRequest, number]>();
    expectTypeOf<FastifyRequest['rateLimit']>().toEqualTypeOf<Decision | undefined>();
    expectTypeOf<{ algorithm: typeof algorithm }>().toMatchTypeOf<SluiceOptions>();
  });
});

describe('@sluice/hono', () => {
  test("rateLimit() is a Hono middleware; c.get('rateLimit') is its Decision", () => {
    const limiter = hono.rateLimit({ algorithm, key: hono.byIp() });
    expectTypeOf(limiter).toMatchTypeOf<MiddlewareHandler>();
    expectTypeOf(limiter).toMatchTypeOf<RateLimitControl<Context>>();
    new Hono().use(limiter).get('/', (c) => {
      expectTypeOf(c.get('rateLimit')).toEqualTypeOf<Decision | undefined>();
      return c.text('ok');
    });
  });
});

describe('@sluice/koa', () => {
  test('rateLimit() is a Koa middleware; ctx.state.rateLimit is its Decision', () => {
    const limiter = koa.rateLimit({ algorithm, key: koa.byIp() });
    expectTypeOf(limiter).toMatchTypeOf<Middleware>();
    expectTypeOf(limiter).toMatchTypeOf<RateLimitControl<KoaContext>>();
    new Koa().use(limiter).use((ctx) => {
      expectTypeOf(ctx.state.rateLimit).toEqualTypeOf<Decision | undefined>();
    });
  });
});

describe('the zero-config start (issue 25 §3)', () => {
  test('every adapter takes no options: the default limit', async () => {
    expectTypeOf(rateLimit()).toEqualTypeOf<RateLimitMiddleware>();
    expectTypeOf(hono.rateLimit()).toEqualTypeOf<hono.RateLimitMiddleware>();
    expectTypeOf(koa.rateLimit()).toEqualTypeOf<koa.RateLimitMiddleware>();
    expectTypeOf(new nest.RateLimitGuard()).toMatchTypeOf<CanActivate>();
    const app = Fastify();
    await app.register(sluice);
    await app.register(sluice, { global: false });
    expectTypeOf(new nest.RateLimitGuard({ global: false })).toMatchTypeOf<CanActivate>();
    // @ts-expect-error global is a boolean
    new nest.RateLimitGuard({ global: 'no' });
    // @ts-expect-error global is the plugin's and the guard's, not a route's
    app.get('/r', { config: { rateLimit: { global: false } satisfies SluiceOptions } }, async () => 'ok');
  });
});

describe('@sluice/nestjs', () => {
  test('the guards are Nest guards; @RateLimit() takes the same options', () => {
    expectTypeOf(new nest.RateLimitGuard({ algorithm })).toMatchTypeOf<CanActivate>();
    expectTypeOf(new nest.RateLimitGuard({ algorithm })).toMatchTypeOf<RateLimitControl<nest.NestRequest>>();
    expectTypeOf(new nest.ConcurrencyLimitGuard({ limit: 5 })).toMatchTypeOf<CanActivate>();
    expectTypeOf(nest.RateLimit).parameter(0).toMatchTypeOf<nest.RateLimitOptions>();
    // @ts-expect-error an unknown option
    new nest.RateLimitGuard({ algorithm, ttl: 60 });
  });
});
