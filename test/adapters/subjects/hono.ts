import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Decision } from '@sluice/core';
import * as sluiceHono from '@sluice/hono';
import { Hono, type Context as HonoContext } from 'hono';
import { refusalStatus } from '../../../packages/core/src/http/problem.js';
import {
  type Control,
  GUARD_ORDER,
  type Guards,
  type Options,
  Probe,
  type Subject,
  serverApp,
} from '../harness.js';

/**
 * The suite's own functions (`skip`, `cost`, keys and priorities taking one argument) read a Node
 * request (`req.headers`, `req.socket`); on Hono they get the Node request under the `Context`
 * (`c.env.incoming` on `@hono/node-server`). sluice's keys (`byIp()`…, two arguments) get the
 * `Context` itself, through the adapter's access.
 */
function onNodeRequest<T>(options: T): T {
  const node = (fn: unknown) =>
    typeof fn === 'function' && fn.length < 2
      ? (c: HonoContext) => (fn as (req: unknown) => unknown)((c.env as { incoming: unknown }).incoming)
      : fn;
  const record = { ...(options as Record<string, unknown>) };
  // A plan per request (`algorithm` as a function) reads the request too.
  for (const name of ['skip', 'cost', 'key', 'priority', 'algorithm']) {
    if (typeof record[name] === 'function') record[name] = node(record[name]);
  }
  if (Array.isArray(record.limits)) {
    record.limits = record.limits.map((limit: Record<string, unknown>) => ({
      ...limit,
      ...(limit.key === undefined ? {} : { key: node(limit.key) }),
      ...(typeof limit.algorithm === 'function' ? { algorithm: node(limit.algorithm) } : {}),
    }));
  }
  return record as T;
}

/**
 * The client address under a trust-proxy setting, for frameworks without one (Hono): the last
 * forwarded hop when the socket is a trusted loopback proxy, the first when every proxy is trusted.
 */
function forwardedAddress(
  trust: boolean | string,
  socket: string | undefined,
  forwarded: string | undefined,
): string | undefined {
  const hops = forwarded?.split(',').map((hop) => hop.trim()) ?? [];
  if (hops.length === 0) return socket;
  if (trust === true) return hops[0];
  const loopback = socket === '127.0.0.1' || socket === '::1' || socket === '::ffff:127.0.0.1';
  return loopback ? hops[hops.length - 1] : socket;
}

const honoGuards = {
  concurrencyLimit: sluiceHono.concurrencyLimit,
  fleetShed: sluiceHono.fleetShed,
  utilizationShed: sluiceHono.utilizationShed,
  adaptiveConcurrency: sluiceHono.adaptiveConcurrency,
} as const;

export const honoSubject: Subject = {
  name: 'hono 4 on @hono/node-server',
  routeConfig: false,
  async create(options) {
    sluiceHono.rateLimit(options as Options);
  },
  async createGuard(name, options) {
    honoGuards[name](options as never);
  },
  async build(spec) {
    const app = new Hono();
    const probe = spec.probe ?? new Probe();
    const trust = spec.trustProxy;
    const access =
      trust === undefined || trust === false
        ? {}
        : {
            address: (c: HonoContext) =>
              forwardedAddress(trust, getConnInfo(c).remote.address, c.req.header('x-forwarded-for')),
            proxyTrust: trust === true ? ('all' as const) : ('some' as const),
          };
    const handler = spec.customHandler
      ? {
          handler: (c: HonoContext, decision: Decision) =>
            c.json({ custom: true, policy: decision.policy }, refusalStatus(decision) as 429),
        }
      : {};
    const guards = (given: Guards | undefined) =>
      GUARD_ORDER.flatMap((name) => {
        const options = given?.[name];
        if (!options) return [];
        const own = name === 'concurrencyLimit' ? { ...options, ...access } : options;
        return [honoGuards[name](onNodeRequest({ ...own, ...handler }) as never)];
      });
    for (const guard of guards(spec.guards)) app.use(guard);
    const global = spec.defaults
      ? sluiceHono.rateLimit()
      : spec.options === undefined
        ? undefined
        : sluiceHono.rateLimit(onNodeRequest({ ...spec.options, ...access, ...handler }));
    if (global !== undefined) app.use(global);
    for (const route of spec.routes) {
      const own = route.limit
        ? sluiceHono.rateLimit(onNodeRequest({ ...route.limit, ...access, ...handler }))
        : undefined;
      const handlers = [...guards(route.guards), ...(own ? [own] : [])];
      // A route's own middleware, registered before its handler: Hono runs them in order.
      for (const middleware of handlers) app.on(route.method, route.path, middleware);
      app.on(route.method, route.path, async (c) => {
        const control = (own ?? global) as Control | undefined;
        const extra = await probe.run(route.path, route.handler, control, c, (name) => c.req.header(name));
        return c.json({ ok: true, remaining: c.get('rateLimit')?.remaining ?? null, ...extra });
      });
    }
    app.onError((error, c) => c.json({ error: error.message }, 500));
    const served = await serverApp(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server);
    return { ...served, reset: (key) => (global as Control).reset(key) };
  },
};
