import type { IncomingHttpHeaders } from 'node:http';
import { nodeHeader } from './express-request.js';
import type { ProxyTrust } from './keys.js';
import type { RequestAccessBase } from './reporter.js';

/**
 * The part of a Fastify request sluice reads, described here so that core imports no framework:
 * `@sluice/fastify` and `@sluice/nestjs` on Fastify read it the same way.
 */
export interface FastifyLikeRequest {
  /** Fastify's address, honouring its `trustProxy` option. */
  readonly ip: string | undefined;
  readonly method: string;
  readonly routeOptions: { readonly url?: string | undefined };
  readonly headers: IncomingHttpHeaders;
}

const trustByPrototype = new WeakMap<object, ProxyTrust>();

/** A long forwarding chain from a public address: only an app that trusts every hop believes it. */
const PROBE = {
  socket: { remoteAddress: '198.51.100.250' },
  connection: { remoteAddress: '198.51.100.250' },
  headers: {
    'x-forwarded-for':
      '198.51.100.1, 198.51.100.2, 198.51.100.3, 198.51.100.4, 198.51.100.5, 198.51.100.6, 198.51.100.7, 198.51.100.8',
  },
};

/**
 * Fastify does not expose its `trustProxy` option, but it builds requests with an `ips` getter on
 * their prototype only when a proxy is trusted; that getter, run on a probe, tells "some" from
 * "all". Done once per request prototype (once per server).
 */
function proxyTrust(request: FastifyLikeRequest): ProxyTrust {
  const prototype = Object.getPrototypeOf(request) as object;
  let trust = trustByPrototype.get(prototype);
  if (trust === undefined) {
    const ip = Object.getOwnPropertyDescriptor(prototype, 'ip')?.get;
    if (!Object.hasOwn(prototype, 'ips') || ip === undefined) trust = 'none';
    else {
      let probed: unknown;
      try {
        probed = ip.call({ raw: PROBE, headers: PROBE.headers });
      } catch {
        probed = undefined;
      }
      trust = probed === '198.51.100.1' ? 'all' : 'some';
    }
    trustByPrototype.set(prototype, trust);
  }
  return trust;
}

/** What sluice's keys read from a Fastify request: its address, route and proxy trust are Fastify's. */
export const fastifyRequestAccess: RequestAccessBase<FastifyLikeRequest> = {
  ip: (request) => request.ip,
  method: (request) => request.method,
  route: (request) => request.routeOptions.url,
  header: (request, name) => nodeHeader(request.headers, name),
  proxyTrust,
};
