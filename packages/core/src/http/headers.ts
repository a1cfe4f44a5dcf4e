import type { Decision } from '../decision.js';
import type { ResolvedLimit } from '../limiter.js';

/**
 * Which RateLimit header fields to send:
 * - `'ietf'`: the current IETF draft (draft-ietf-httpapi-ratelimit-headers-08 to -11):
 *   `RateLimit: "burst";r=3;t=2` and `RateLimit-Policy: "burst";q=20;w=10`, one list member per
 *   layered limit.
 * - `'draft-7'`: `RateLimit: limit=20, remaining=3, reset=2` and `RateLimit-Policy: 20;w=10`.
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and `RateLimit-Policy`.
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds from
 *   now, like `@fastify/rate-limit`; not an epoch time, so client clocks do not matter).
 */
export type HeaderFormat = 'ietf' | 'draft-7' | 'draft-6' | 'legacy';

export const HEADER_FORMATS = [
  'ietf',
  'draft-7',
  'draft-6',
  'legacy',
] as const satisfies readonly HeaderFormat[];

/** Sets one response header; adapters pass `res.setHeader` / `reply.header` in this shape. */
export type SetHeader<Res> = (res: Res, name: string, value: string) => void;

/** Reads a response header already set (by an earlier middleware), or `undefined`. */
export type GetHeader<Res> = (res: Res, name: string) => string | undefined;

/** ms → delay-seconds, rounded up so a client that waits them is never early. */
export function seconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/**
 * The RateLimit reset of one limit, in seconds. For a limit that refused the request, it is when
 * the request can be retried (`retryAfter`, at least 1 s): the IETF draft asks that a response
 * carrying both `Retry-After` and `RateLimit` name the same instant in both, and a token bucket
 * whose next token is 1 s away must not tell clients to wait until it is full. For a limit that
 * admitted (or one no retry can satisfy, `retryAfter` -1), it is when the limit is full again
 * (`resetAfter`).
 */
export function resetSeconds(decision: Decision): number {
  return !decision.allowed && decision.retryAfter >= 0
    ? Math.max(1, seconds(decision.retryAfter))
    : seconds(decision.resetAfter);
}

/** A structured-field list with `members` added after those already in `earlier`. */
function extend(earlier: string | undefined, members: string): string {
  return earlier === undefined || earlier === '' ? members : `${earlier}, ${members}`;
}

/** A String per RFC 8941 §3.3.3: printable ASCII with `"` and `\` escaped. */
function sfString(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

interface LimitHeader {
  /** `"burst"`: the name as a structured-field String. */
  readonly quoted: string;
  /** `"burst";q=20;w=10` (ietf) or `20;w=10` (draft-6/7). */
  readonly policy: string;
}

/**
 * The header strings of one middleware, precomputed at creation: per request only the numbers of
 * the Decision are formatted.
 */
export class RateLimitHeaders {
  readonly format: HeaderFormat | false;
  private readonly byName = new Map<string, LimitHeader>();
  private readonly fullPolicy: string;
  private readonly count: number;
  /** Whether some limit is in shadow mode and `shadowHeaders` is off: its decisions are filtered out. */
  private readonly hidesShadows: boolean;

  constructor(format: HeaderFormat | false, all: readonly ResolvedLimit[], shadows = false) {
    this.format = format;
    const limits = shadows ? all : all.filter((limit) => limit.enforce);
    this.hidesShadows = limits.length !== all.length;
    this.count = limits.length;
    for (const limit of limits) {
      const quoted = sfString(limit.name);
      const quota = `q=${limit.algorithm.limit};w=${Math.max(1, seconds(limit.algorithm.window))}`;
      this.byName.set(limit.name, {
        quoted,
        policy:
          format === 'ietf'
            ? `${quoted};${quota}`
            : `${limit.algorithm.limit};w=${Math.max(1, seconds(limit.algorithm.window))}`,
      });
    }
    this.fullPolicy = limits.map((limit) => this.byName.get(limit.name)!.policy).join(', ');
  }

  /**
   * Writes the headers for `decision`; nothing when no limit applied to the request (no policy:
   * skipped, or the store failed). A decision without `limits` is one limit's own. With `get`, the
   * `'ietf'` lists extend what an earlier middleware set (an app-wide limit and a route's own each
   * add their members, as one layered middleware would); the other formats describe one limit,
   * so the last middleware's replaces them.
   */
  write<Res>(decision: Decision, res: Res, set: SetHeader<Res>, get?: GetHeader<Res>): void {
    if (this.format === false || decision.policy === '') return;
    let limits = decision.limits.length === 0 ? [decision] : decision.limits;
    if (this.hidesShadows) {
      limits = limits.filter((d) => d.shadow !== true);
      // Every limit that applied is in shadow mode: nothing to tell the client.
      if (limits.length === 0) return;
    }
    switch (this.format) {
      case 'ietf': {
        let value = '';
        for (let i = 0; i < limits.length; i++) {
          const d = limits[i]!;
          const item = `${this.item(d.policy).quoted};r=${d.remaining};t=${resetSeconds(d)}`;
          value = i === 0 ? item : `${value}, ${item}`;
        }
        set(res, 'RateLimit-Policy', extend(get?.(res, 'RateLimit-Policy'), this.policy(limits)));
        set(res, 'RateLimit', extend(get?.(res, 'RateLimit'), value));
        return;
      }
      case 'draft-7':
        set(res, 'RateLimit-Policy', this.policy(limits));
        set(
          res,
          'RateLimit',
          `limit=${decision.limit}, remaining=${decision.remaining}, reset=${resetSeconds(decision)}`,
        );
        return;
      case 'draft-6':
        set(res, 'RateLimit-Policy', this.policy(limits));
        set(res, 'RateLimit-Limit', String(decision.limit));
        set(res, 'RateLimit-Remaining', String(decision.remaining));
        set(res, 'RateLimit-Reset', String(resetSeconds(decision)));
        return;
      case 'legacy':
        set(res, 'X-RateLimit-Limit', String(decision.limit));
        set(res, 'X-RateLimit-Remaining', String(decision.remaining));
        set(res, 'X-RateLimit-Reset', String(resetSeconds(decision)));
        return;
    }
  }

  /** The policy list of the limits that applied (a limit whose key was `undefined` did not) and are shown. */
  private policy(limits: readonly Decision[]): string {
    if (limits.length === this.count) return this.fullPolicy;
    let value = '';
    for (let i = 0; i < limits.length; i++) {
      const policy = this.item(limits[i]!.policy).policy;
      value = i === 0 ? policy : `${value}, ${policy}`;
    }
    return value;
  }

  private item(name: string): LimitHeader {
    // A decision from outside this middleware's limits (a shedder's) gets its header made on demand.
    return this.byName.get(name) ?? { quoted: sfString(name), policy: sfString(name) };
  }
}
