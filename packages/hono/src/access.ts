import type { ProxyTrust } from '@sluice/core';
import { functionOption, oneOfOption, type RequestAccessBase } from '@sluice/core/adapter';
import type { Context } from 'hono';
import { matchedRoutes } from 'hono/route';

/** How the middleware learns the client address; the options every Hono middleware of sluice takes. */
export interface HonoAccessOptions {
  /**
   * The client address of a request. Hono has no runtime-neutral way to read it: on Node
   * (`@hono/node-server`) the default reads the socket address, as its `getConnInfo` does; on
   * Bun, Deno and Workers pass the runtime's own, e.g. `(c) => getConnInfo(c).remote.address`
   * with `getConnInfo` from `hono/bun` or `hono/deno`, or `(c) => c.req.header('cf-connecting-ip')`
   * on Cloudflare Workers. Behind your own proxy, return the address it forwards.
   * @default the Node socket's `remoteAddress` (`undefined` elsewhere: `byIp()` then skips the limit)
   */
  address?: (c: Context) => string | undefined;
  /**
   * How far `address` believes `X-Forwarded-For`, for `byIp()`'s configuration warnings:
   * `'none'` (it reads the socket), `'some'` (only your proxies' hops), `'all'` (any client can
   * choose its address: warned about).
   * @default 'none' with the default `address`, 'some' with yours
   */
  proxyTrust?: ProxyTrust;
}

export const ACCESS_OPTIONS = [
  'address',
  'proxyTrust',
] as const satisfies readonly (keyof HonoAccessOptions)[];

interface NodeBindings {
  incoming?: { socket?: { remoteAddress?: string } };
}

/** The socket address on `@hono/node-server` (its `HttpBindings`), the one its `getConnInfo` reports. */
const nodeAddress = (c: Context): string | undefined =>
  (c.env as NodeBindings | undefined)?.incoming?.socket?.remoteAddress;

/**
 * The matched route pattern of the request's endpoint (the last matched route that is not an
 * `app.use()` middleware), known to every middleware since Hono routes before it runs.
 */
function route(c: Context): string | undefined {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i]!.method !== 'ALL') return routes[i]!.path;
  }
  return undefined;
}

/** What sluice's keys read from a Hono `Context`, resolved once from the options. */
export function honoAccess(options: HonoAccessOptions): RequestAccessBase<Context> {
  const address = functionOption('address', options.address);
  const trust = oneOfOption('proxyTrust', options.proxyTrust ?? (address === undefined ? 'none' : 'some'), [
    'none',
    'some',
    'all',
  ]);
  return {
    ip: address ?? nodeAddress,
    method: (c) => c.req.method,
    route,
    header: (c, name) => c.req.header(name),
    proxyTrust: () => trust,
  };
}
