import type { IncomingHttpHeaders } from 'node:http';
import type { ProxyTrust } from './keys.js';
import type { RequestAccessBase } from './reporter.js';

/**
 * The part of an Express request (4 and 5) sluice reads, described here so that core imports no
 * framework: `@sluice/express` and `@sluice/nestjs` on Express read it the same way.
 */
export interface ExpressLikeRequest {
  readonly app: { get(setting: string): unknown };
  /** Express's address, honouring its `trust proxy` setting. */
  readonly ip?: string | undefined;
  readonly socket: { readonly remoteAddress?: string | undefined };
  readonly method: string;
  /** Set once a route has matched: inside a route's own middleware, not in `app.use()`. */
  readonly route?: { readonly path?: unknown } | undefined;
  readonly headers: IncomingHttpHeaders;
}

/** A public address and a long forwarding chain: only an app that trusts every hop believes it. */
const PROBE_ADDRESS = '198.51.100.250';
const PROBE_HOPS = 8;

const trustByApp = new WeakMap<object, ProxyTrust>();

/** How far the Express app trusts proxies, read once per app from its `trust proxy` settings. */
function proxyTrust(req: ExpressLikeRequest): ProxyTrust {
  const app = req.app;
  let trust = trustByApp.get(app);
  if (trust === undefined) {
    const setting: unknown = app.get('trust proxy');
    const trusts = app.get('trust proxy fn') as ((address: string, hop: number) => boolean) | undefined;
    if (setting === false || setting === 0 || setting === undefined || trusts === undefined) trust = 'none';
    else if (setting === true || trusts(PROBE_ADDRESS, PROBE_HOPS)) trust = 'all';
    else trust = 'some';
    trustByApp.set(app, trust);
  }
  return trust;
}

/** A request header by lower-case name, repeated ones joined (Node's `IncomingHttpHeaders`). */
export function nodeHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** What sluice's keys read from an Express request: its address, route and proxy trust are Express's. */
export const expressRequestAccess: RequestAccessBase<ExpressLikeRequest> = {
  // With no proxy trusted, Express's req.ip is the socket address, but its getter still runs
  // proxy-addr over X-Forwarded-For on every call: read the socket directly (same answer).
  ip: (req) => (proxyTrust(req) === 'none' ? req.socket.remoteAddress : req.ip),
  method: (req) => req.method,
  route: (req) => {
    const path: unknown = req.route?.path;
    return typeof path === 'string' ? path : undefined;
  },
  header: (req, name) => nodeHeader(req.headers, name),
  proxyTrust,
};
