import type { ProxyTrust } from '@sluice/core';
import { nodeHeader, type RequestAccessBase } from '@sluice/core/adapter';
import type { Context } from 'koa';

/**
 * How far the Koa app trusts proxies: `app.proxy` off, none; on with `app.maxIpsCount` (the hops
 * read from `X-Forwarded-For`), some; on without a count, every hop.
 */
function proxyTrust(ctx: Context): ProxyTrust {
  const app = ctx.app;
  if (!app.proxy) return 'none';
  return app.maxIpsCount > 0 ? 'some' : 'all';
}

/** What sluice's keys read from a Koa context. */
export const koaAccess: RequestAccessBase<Context> = {
  // Koa's ctx.ip honours app.proxy and app.maxIpsCount; it is '' when the socket has no address.
  ip: (ctx) => ctx.ip || undefined,
  method: (ctx) => ctx.method,
  // Set by @koa/router once a route has matched: inside router middleware, not in app.use().
  route: (ctx) => {
    const path: unknown = (ctx as { _matchedRoute?: unknown })._matchedRoute;
    return typeof path === 'string' ? path : undefined;
  },
  header: (ctx, name) => nodeHeader(ctx.headers, name),
  proxyTrust,
};
