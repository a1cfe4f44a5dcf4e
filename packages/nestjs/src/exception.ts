import { HttpException } from '@nestjs/common';
import type { Decision, ProblemDetails } from '@sluice/core';

/**
 * Thrown by sluice's guards for a refused request (429 or 503). Its response is the RFC 9457
 * problem body, and the guard has already set `Content-Type: application/problem+json`,
 * `Retry-After` and the RateLimit headers on the response, so Nest's default exception filter
 * sends exactly sluice's refusal. Catch it in your own filter (`@Catch(RateLimitException)`) to
 * answer otherwise: `decision` says why.
 */
export class RateLimitException extends HttpException {
  constructor(
    readonly decision: Decision,
    body: ProblemDetails,
    status: number,
  ) {
    super(body, status);
  }
}
