import type { Decision, HttpLimitOptions } from '@sluice/core';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Options of the plugin, of `config.rateLimit` on a route, and of `app.rateLimit()`. */
export interface SluiceOptions extends HttpLimitOptions<FastifyRequest> {
  /**
   * The hook the limits run in. `'onRequest'` refuses before the body is read or parsed;
   * `'preHandler'` runs after authentication hooks and validation (so keys can read
   * `request.user`).
   * @default 'onRequest'
   */
  hook?: 'onRequest' | 'preHandler';
  /**
   * Answers a refused request instead of the default RFC 9457 problem body. Called after the
   * `RateLimit*` and `Retry-After` headers are set; the status is preset (429 or 503). Its return
   * value, if the reply was not sent, is sent as the payload.
   * @default a 429 or 503 `application/problem+json` reply
   */
  handler?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown;
}

/** The plugin's own option names, beside the shared ones. */
export const FASTIFY_OPTIONS = ['hook', 'handler'] as const satisfies readonly (keyof SluiceOptions)[];
