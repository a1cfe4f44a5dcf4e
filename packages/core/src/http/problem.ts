import type { Decision } from '../decision.js';
import { resetSeconds, seconds } from './headers.js';

/** RFC 9457 problem type for a refusal by a rate limit (IETF RateLimit draft §5.1). */
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
/** RFC 9457 problem type for a refusal to protect capacity (IETF RateLimit draft §5.2). */
export const TEMPORARY_REDUCED_CAPACITY =
  'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';

/** The media type of the refusal body. */
export const PROBLEM_JSON = 'application/problem+json';
/** The refusal body's `Content-Type`, as every adapter sends it. */
export const PROBLEM_CONTENT_TYPE = `${PROBLEM_JSON}; charset=utf-8`;

/** An RFC 9457 problem body with the draft's `violated-policies` extension. */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly 'violated-policies': readonly string[];
}

/**
 * The status for a refusal: 503 when the service protects itself (a load shedder, or the limiter's
 * store is down and the policy is to deny), 429 when the client used up its quota.
 */
export function refusalStatus(decision: Decision): 429 | 503 {
  return decision.reason === 'shed' || decision.reason === 'store-unavailable' ? 503 : 429;
}

/**
 * `Retry-After` in delay-seconds for a refusal: the latest RateLimit reset among the limits that
 * refused (`resetSeconds`: their `retryAfter`, rounded up, at least 1), so `Retry-After` and the
 * refusing limit's `t` / `reset` name the same instant, as the IETF draft asks. `undefined` when
 * no retry can succeed (`cost-exceeds-limit`, retryAfter -1): the header is then left out rather
 * than inviting a retry that will be refused again.
 */
export function retryAfterSeconds(decision: Decision): number | undefined {
  if (decision.retryAfter < 0) return undefined;
  let latest = 0;
  for (const d of decision.limits) {
    if (d.allowed || d.shadow === true) continue;
    if (d.retryAfter < 0) return undefined;
    latest = Math.max(latest, resetSeconds(d));
  }
  // A decision of its own (a shedder's, a lease's) or one whose limits all admitted.
  return latest === 0 ? Math.max(1, seconds(decision.retryAfter)) : latest;
}

/** The problem body for a refusal. */
export function problemDetails(decision: Decision, retryAfter: number | undefined): ProblemDetails {
  const status = refusalStatus(decision);
  const violated = decision.limits.filter((d) => !d.allowed && d.shadow !== true).map((d) => d.policy);
  if (violated.length === 0 && decision.policy !== '') violated.push(decision.policy);
  const names = violated.map((name) => JSON.stringify(name)).join(', ');
  const retry = retryAfter === undefined ? '' : ` Retry in ${retryAfter} s.`;
  let detail: string;
  switch (decision.reason) {
    case 'cost-exceeds-limit':
      detail = `The request costs more than ${names} can ever admit (quota ${decision.limit}); retrying will not help.`;
      break;
    case 'concurrency':
      detail = `Too many requests in flight for ${names}.${retry}`;
      break;
    case 'shed':
      detail = `The service is shedding load to protect itself.${retry}`;
      break;
    case 'blocked':
      detail = `Blocked by ${names} after too many requests.${retry}`;
      break;
    case 'store-unavailable':
      detail = `The rate limiter is unavailable, so the request was refused.${retry}`;
      break;
    default:
      detail = `Too many requests for ${names}.${retry}`;
  }
  return status === 503
    ? {
        type: TEMPORARY_REDUCED_CAPACITY,
        title: 'Request cannot be satisfied due to temporary server capacity constraints',
        status,
        detail,
        'violated-policies': violated,
      }
    : {
        type: QUOTA_EXCEEDED,
        title: 'Request cannot be satisfied as assigned quota has been exceeded',
        status,
        detail,
        'violated-policies': violated,
      };
}

/** How to answer a refused request. */
export interface Refusal {
  /** 429 (rate limit) or 503 (shed, or store down under `storeFailure: 'deny'`). */
  readonly status: 429 | 503;
  /** `Retry-After` in delay-seconds; `undefined` when no retry can succeed. */
  readonly retryAfter: number | undefined;
  /** The RFC 9457 body, sent as `application/problem+json`. */
  readonly body: ProblemDetails;
}

/** Status, `Retry-After` and problem body for a refused decision: what every adapter sends. */
export function refusal(decision: Decision): Refusal {
  const retryAfter = retryAfterSeconds(decision);
  return { status: refusalStatus(decision), retryAfter, body: problemDetails(decision, retryAfter) };
}
