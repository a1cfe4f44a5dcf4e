import type { Decision, HeaderFormat, ProblemDetails, ResolvedLimit } from '@sluice/core';
import { PROBLEM_CONTENT_TYPE, RateLimitHeaders, refusal } from '@sluice/core/adapter';

/** What a client receives for one decision, as every adapter sends it. */
export interface ClientView {
  /** 200, or 429 / 503 for a refusal. */
  readonly status: number;
  /** Response headers in the order they are set. */
  readonly headers: readonly (readonly [name: string, value: string])[];
  /** The RFC 9457 body of a refusal. */
  readonly body: ProblemDetails | undefined;
  /** ms the server holds an admitted request before serving it (leaky bucket queue). */
  readonly delay: number;
}

/**
 * The response for `decision`, made by core's own formatting (`RateLimitHeaders` for the RateLimit
 * fields, `refusal` for the status, `Retry-After` and body): the page shows what a client sees.
 */
export function clientView(
  decision: Decision,
  limits: readonly ResolvedLimit[],
  format: HeaderFormat,
): ClientView {
  const headers: [string, string][] = [];
  new RateLimitHeaders(format, limits).write(decision, headers, (list, name, value) => {
    list.push([name, value]);
  });
  if (decision.allowed) return { status: 200, headers, body: undefined, delay: decision.delay };
  const refused = refusal(decision);
  if (refused.retryAfter !== undefined) headers.push(['Retry-After', String(refused.retryAfter)]);
  headers.push(['Content-Type', PROBLEM_CONTENT_TYPE]);
  return { status: refused.status, headers, body: refused.body, delay: 0 };
}
