import type { IncomingHttpHeaders } from 'node:http';
import type { Decision } from '@sluice/core';
import {
  type ExpressLikeRequest,
  expressRequestAccess,
  type FastifyLikeRequest,
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

/** Fastify's requests carry `routeOptions`; Express's do not. */
const onFastify = (req: object): req is FastifyLikeRequest => 'routeOptions' in req;

/**
 * What sluice's keys read from a request, on whichever platform the app runs: each platform's own
 * reading, chosen per request (a property test), so one guard serves apps on either platform and
 * the address honours that platform's proxy trust, never sluice's own parsing.
 */
export const nestAccess: RequestAccessBase<object> = {
  ip: (req) =>
    onFastify(req) ? fastifyRequestAccess.ip(req) : expressRequestAccess.ip(req as ExpressLikeRequest),
  method: (req) => (req as NestRequest).method,
  route: (req) =>
    onFastify(req) ? fastifyRequestAccess.route(req) : expressRequestAccess.route(req as ExpressLikeRequest),
  header: (req, name) => nodeHeader((req as NestRequest).headers, name),
  proxyTrust: (req) =>
    onFastify(req)
      ? fastifyRequestAccess.proxyTrust(req)
      : expressRequestAccess.proxyTrust(req as ExpressLikeRequest),
};
