import type { Decision } from '@sluice/core';
import type { Refusal } from '@sluice/core/adapter';
import type { FastifyRequest } from 'fastify';

/**
 * A refusal handed to the app's error handler (`setErrorHandler`), as @fastify/rate-limit hands
 * its own: the app's custom 429 body and its error logging see every refused request. `statusCode`
 * is 429 or 503 (Fastify's default handler would answer with it); the reply's status is left as
 * it was, for the handler to set. `body` is the problem body sluice would have sent.
 */
export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError';
  /** `'ERR_SLUICE_RATE_LIMITED'` (429) or `'ERR_SLUICE_SERVICE_UNAVAILABLE'` (503: shed, or the store down under `storeFailure: 'deny'`). */
  readonly code: 'ERR_SLUICE_RATE_LIMITED' | 'ERR_SLUICE_SERVICE_UNAVAILABLE';
  readonly statusCode: 429 | 503;
  /** `Retry-After` in seconds, as the header says; `undefined` when no retry can succeed. */
  readonly retryAfter: number | undefined;
  /** The RFC 9457 problem body sluice sends when the app has no error handler. */
  readonly body: Refusal['body'];
  readonly decision: Decision;

  constructor(refusal: Refusal, decision: Decision) {
    super(refusal.body.detail);
    this.statusCode = refusal.status;
    this.code = refusal.status === 429 ? 'ERR_SLUICE_RATE_LIMITED' : 'ERR_SLUICE_SERVICE_UNAVAILABLE';
    this.retryAfter = refusal.retryAfter;
    this.body = refusal.body;
    this.decision = decision;
  }
}

/**
 * Whether the request's route answers errors with the app's own handler. Fastify keeps a
 * route's handler on its encapsulation context (`request.server`, the instance the route was
 * declared in); Fastify's own is named `defaultErrorHandler` (fastify `lib/error-handler.js`),
 * and with it sluice sends its problem body itself, which that handler would flatten into
 * `{ statusCode, code, error, message }`.
 */
export function hasAppErrorHandler(request: FastifyRequest): boolean {
  const handler = (request.server as { errorHandler?: unknown }).errorHandler;
  return typeof handler === 'function' && handler.name !== 'defaultErrorHandler';
}
