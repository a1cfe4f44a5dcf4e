import { createServer } from 'node:http';
import Router from '@koa/router';
import type { Decision } from '@sluice/core';
import * as sluiceKoa from '@sluice/koa';
import Koa, { type Context as KoaContext, type Middleware as KoaMiddleware } from 'koa';
import {
  type Control,
  GUARD_ORDER,
  type Guards,
  type Options,
  Probe,
  type Subject,
  serverApp,
} from '../harness.js';

const koaGuards = {
  concurrencyLimit: sluiceKoa.concurrencyLimit,
  fleetShed: sluiceKoa.fleetShed,
  utilizationShed: sluiceKoa.utilizationShed,
  adaptiveConcurrency: sluiceKoa.adaptiveConcurrency,
} as const;

export const koaSubject: Subject = {
  name: 'koa 3 with @koa/router',
  routeConfig: false,
  async create(options) {
    sluiceKoa.rateLimit(options as Options);
  },
  async createGuard(name, options) {
    koaGuards[name](options as never);
  },
  async build(spec) {
    const app = new Koa();
    // Errors are answered below; Koa's own logging of them would only be noise here.
    app.silent = true;
    if (spec.trustProxy !== undefined && spec.trustProxy !== false) {
      app.proxy = true;
      // One trusted hop (the loopback proxy) reads the last forwarded address; 0 trusts them all.
      app.maxIpsCount = spec.trustProxy === true ? 0 : 1;
    }
    const probe = spec.probe ?? new Probe();
    const handler = spec.customHandler
      ? {
          handler: (ctx: KoaContext, decision: Decision) => {
            ctx.body = { custom: true, policy: decision.policy };
          },
        }
      : {};
    const guards = (given: Guards | undefined): KoaMiddleware[] =>
      GUARD_ORDER.flatMap((name) => {
        const options = given?.[name];
        return options ? [koaGuards[name]({ ...options, ...handler } as never) as KoaMiddleware] : [];
      });
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (error) {
        ctx.status = 500;
        ctx.body = { error: (error as Error).message };
      }
    });
    for (const guard of guards(spec.guards)) app.use(guard);
    const global = spec.defaults
      ? sluiceKoa.rateLimit()
      : spec.options === undefined
        ? undefined
        : sluiceKoa.rateLimit({ ...spec.options, ...handler });
    if (global !== undefined) app.use(global);
    const router = new Router();
    for (const route of spec.routes) {
      const own = route.limit ? sluiceKoa.rateLimit({ ...route.limit, ...handler }) : undefined;
      const handlers = [...guards(route.guards), ...(own ? [own as KoaMiddleware] : [])];
      const method = route.method === 'GET' ? 'get' : 'post';
      router[method](route.path, ...handlers, async (ctx) => {
        const control = (own ?? global) as Control | undefined;
        const extra = await probe.run(
          route.path,
          route.handler,
          control,
          ctx,
          (name) => ctx.get(name) || undefined,
        );
        ctx.body = { ok: true, remaining: ctx.state.rateLimit?.remaining ?? null, ...extra };
      });
    }
    app.use(router.routes());
    const served = await serverApp(createServer(app.callback()).listen(0, '127.0.0.1'));
    return { ...served, reset: (key) => (global as Control).reset(key) };
  },
};
