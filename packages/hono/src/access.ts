import type { ProxyTrust } from '@sluice/core';
import { functionOption, oneOfOption, type RequestAccessBase } from '@sluice/core/adapter';
import type { Context } from 'hono';
import { getRuntimeKey } from 'hono/adapter';
import { matchedRoutes } from 'hono/route';

/** How the middleware learns the client address; the options every Hono middleware of sluice takes. */
export interface HonoAccessOptions {
  /**
   * The client address of a request. The default reads what the runtime gives, as Hono's own
   * `getConnInfo` for that runtime does: on Node (`@hono/node-server`) the socket's
   * `remoteAddress`; on Bun the server's `requestIP(c.req.raw)`; on Deno the handler info's
   * `remoteAddr`; on Cloudflare Workers the `CF-Connecting-IP` header, which Cloudflare's edge
   * sets (read on Workers only: elsewhere any client could send it). Behind your own proxy, return
   * the address it forwards. Where no address is found, `byIp()` skips the limit for the request
   * and says so once (`SLUICE_NO_CLIENT_ADDRESS`).
   * @default the runtime's client address (above)
   */
  address?: (c: Context) => string | undefined;
  /**
   * How far `address` believes `X-Forwarded-For`, for `byIp()`'s configuration warnings:
   * `'none'` (it reads the socket), `'some'` (only your proxies' hops), `'all'` (any client can
   * choose its address: warned about).
   * @default 'none' with the default `address` ('some' on Workers, whose address Cloudflare's edge forwards), 'some' with yours
   */
  proxyTrust?: ProxyTrust;
}

export const ACCESS_OPTIONS = [
  'address',
  'proxyTrust',
] as const satisfies readonly (keyof HonoAccessOptions)[];

type AddressReader = (c: Context) => string | undefined;

/** `@hono/node-server`'s bindings (`HttpBindings`): the Node request under the `Context`. */
interface NodeBindings {
  incoming?: { socket?: { remoteAddress?: string } };
}

/** Bun's server, the second argument of `fetch` (`Bun.serve`, `export default app`). */
interface BunServer {
  requestIP?: (request: Request) => { address: string } | null;
}

/** Deno's `ServeHandlerInfo`, the second argument of `fetch` (`Deno.serve`, `deno serve`). */
interface DenoServeInfo {
  remoteAddr?: { hostname?: string };
}

/** The socket address on `@hono/node-server`, the one its `getConnInfo` reports. */
const nodeAddress: AddressReader = (c) =>
  (c.env as NodeBindings | undefined)?.incoming?.socket?.remoteAddress;

/**
 * What `getConnInfo` from `hono/bun` reports: `requestIP` of the server in `c.env` (or in
 * `c.env.server`). An app served by `@hono/node-server` on Bun has the Node socket instead.
 */
const bunAddress: AddressReader = (c) => {
  const env = c.env as (BunServer & { server?: BunServer }) | undefined;
  const server = env?.server ?? env;
  if (typeof server?.requestIP !== 'function') return nodeAddress(c);
  return server.requestIP(c.req.raw)?.address;
};

/** What `getConnInfo` from `hono/deno` reports: `remoteAddr.hostname` (none on a Unix socket). */
const denoAddress: AddressReader = (c) =>
  (c.env as DenoServeInfo | undefined)?.remoteAddr?.hostname ?? nodeAddress(c);

/**
 * What `getConnInfo` from `hono/cloudflare-workers` reports: the header Cloudflare's edge sets to
 * the connecting client's address, replacing any the client sent.
 */
const workersAddress: AddressReader = (c) => c.req.header('cf-connecting-ip');

/**
 * The runtime's own reader, chosen by the runtime the app runs on (as Hono's `getRuntimeKey`
 * tells it), never by what the request carries: the Workers header is believed on Workers only.
 */
const RUNTIME_ADDRESS: Partial<Record<ReturnType<typeof getRuntimeKey>, AddressReader>> = {
  bun: bunAddress,
  deno: denoAddress,
  workerd: workersAddress,
};

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
  const runtime = getRuntimeKey();
  // On Workers the default address is the one Cloudflare's proxy forwards: a trusted proxy.
  const forwarded = address !== undefined || runtime === 'workerd';
  const trust = oneOfOption('proxyTrust', options.proxyTrust ?? (forwarded ? 'some' : 'none'), [
    'none',
    'some',
    'all',
  ]);
  return {
    ip: address ?? RUNTIME_ADDRESS[runtime] ?? nodeAddress,
    method: (c) => c.req.method,
    route,
    header: (c, name) => c.req.header(name),
    proxyTrust: () => trust,
  };
}
