import type { ProxyTrust } from '@sluice/core';
import type { RequestAccessBase } from '@sluice/core/adapter';
import type { Application, Request } from 'express';

/** A public address and a long forwarding chain: only an app that trusts every hop believes it. */
const PROBE_ADDRESS = '198.51.100.250';
const PROBE_HOPS = 8;
const trustByApp = new WeakMap<Application, ProxyTrust>();

/** How far the Express app trusts proxies, read once per app from its `trust proxy` settings. */
function proxyTrust(req: Request): ProxyTrust {
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

/** What sluice's keys read from an Express request (4 and 5). */
export const expressAccess: RequestAccessBase<Request> = {
  // With no proxy trusted, Express's req.ip is the socket address, but its getter still runs
  // proxy-addr over X-Forwarded-For on every call: read the socket directly (same answer).
  ip: (req) => (proxyTrust(req) === 'none' ? req.socket.remoteAddress : req.ip),
  method: (req) => req.method,
  // Set only once a route has matched: inside per-route middleware, not in app.use().
  route: (req) => {
    const path: unknown = req.route?.path;
    return typeof path === 'string' ? path : undefined;
  },
  header: (req, name) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  },
  proxyTrust,
};
