import type { RequestAccessBase } from '@sluice/core/adapter';
import { fastifyRequestAccess } from '@sluice/core/adapter';
import type { FastifyRequest } from 'fastify';

/**
 * What sluice's keys read from a Fastify request: `request.ip` under the server's `trustProxy`,
 * the route's URL pattern, the headers. Written once in core, where `@sluice/nestjs` on Fastify
 * reads requests the same way.
 */
export const fastifyAccess: RequestAccessBase<FastifyRequest> = fastifyRequestAccess;
