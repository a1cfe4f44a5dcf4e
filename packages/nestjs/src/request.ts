import type { IncomingHttpHeaders } from 'node:http';
import type { Decision } from '@sluice/core';
import {
  expressRequestAccess,
  fastifyRequestAccess,
  nodeHeader,
  type RequestAccessBase,
} from '@sluice/core/adapter';

/**
 * A request as Nest hands it to a guard on either platform it runs on: Express's `Request` or
 * Fastify's `FastifyRequest`, described by what both have. Functions in the options (`key`,
 * `skip`, `cost`, `priority`) may take your platform's own type (`(req: Request) => …`): the
 * guard's type follows them.
 */
export interface NestRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The platform's client address, honouring its proxy trust (Express `trust proxy`, Fastify `trustProxy`). */
  readonly ip?: string | undefined;
  /** The Decision of the last sluice limit that limited this request, on either platform. */
  rateLimit?: Decision | undefined;
}

/**
 * A request on another HTTP platform than Express and Fastify (a custom Nest adapter): its `ip` as
 * the platform set it, no route pattern, and a proxy trust sluice cannot read ('some': no
 * warning either way).
 */
const otherAccess: RequestAccessBase<NestRequest> = {
  ip: (req) => req.ip,
  method: (req) => req.method,
  route: () => undefined,
  header: (req, name) => nodeHeader(req.headers, name),
  proxyTrust: () => 'some',
};

/**
 * Each platform's own reading of its requests, chosen per request by a property test (Fastify's
 * carry `routeOptions`, Express's an `app` with settings), so one guard serves apps on either
 * platform and the address honours that platform's proxy trust, never sluice's own parsing.
 */
function accessOf(req: object): RequestAccessBase<object> {
  if ('routeOptions' in req) return fastifyRequestAccess as RequestAccessBase<object>;
  const app = (req as { app?: { get?: unknown } }).app;
  if (typeof app?.get === 'function') return expressRequestAccess as RequestAccessBase<object>;
  return otherAccess as RequestAccessBase<object>;
}

/** What sluice's keys read from a request, on whichever platform the app runs. */
export const nestAccess: RequestAccessBase<object> = {
  ip: (req) => accessOf(req).ip(req),
  method: (req) => (req as NestRequest).method,
  route: (req) => accessOf(req).route(req),
  header: (req, name) => nodeHeader((req as NestRequest).headers, name),
  proxyTrust: (req) => accessOf(req).proxyTrust(req),
};
