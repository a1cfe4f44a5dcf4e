import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';

/** A limit as the headers see it: a fixed algorithm, or none when its plan is chosen per request. */
export interface HeaderLimit {
  readonly name: string;
  readonly algorithm: Algorithm | undefined;
  /** `false`: the limit is in shadow mode (its headers are sent only with `shadowHeaders`). */
  readonly enforce: boolean;
}

/** The plan a request was checked against on the limit of this name (limits chosen per request). */
export type PlanOf = (name: string) => Algorithm | undefined;

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
  /** `"burst";q=20;w=10` (ietf) or `20;w=10` (draft-6/7); for a per-request plan, its last one. */
  policy: string;
  /** A limit whose plan is per request: its policy strings by plan fingerprint (bounded). */
  readonly plans: Map<string, string> | undefined;
}

/** Per-request plans' policy strings kept per limit (a handful of tiers in practice). */
const PLAN_POLICIES = 64;

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

  private readonly planned: boolean;

  constructor(format: HeaderFormat | false, all: readonly HeaderLimit[], shadows = false) {
    this.format = format;
    const limits = shadows ? all : all.filter((limit) => limit.enforce);
    this.hidesShadows = limits.length !== all.length;
    this.count = limits.length;
    this.planned = limits.some((limit) => limit.algorithm === undefined);
    for (const limit of limits) {
      const quoted = sfString(limit.name);
      this.byName.set(limit.name, {
        quoted,
        policy: limit.algorithm === undefined ? quoted : this.quota(quoted, limit.algorithm),
        plans: limit.algorithm === undefined ? new Map() : undefined,
      });
    }
    this.fullPolicy = limits.map((limit) => this.byName.get(limit.name)!.policy).join(', ');
  }

  private quota(quoted: string, algorithm: Algorithm): string {
    const window = Math.max(1, seconds(algorithm.window));
    return this.format === 'ietf'
      ? `${quoted};q=${algorithm.limit};w=${window}`
      : `${algorithm.limit};w=${window}`;
  }

  /**
   * Writes the headers for `decision`; nothing when no limit applied to the request (no policy:
   * skipped, or the store failed). A decision without `limits` is one limit's own. With `get`, the
   * `'ietf'` lists extend what an earlier middleware set (an app-wide limit and a route's own each
   * add their members, as one layered middleware would); the other formats describe one limit,
   * so the last middleware's replaces them. Answers whether it set any header.
   */
  write<Res>(
    decision: Decision,
    res: Res,
    set: SetHeader<Res>,
    get?: GetHeader<Res>,
    plan?: PlanOf,
  ): boolean {
    // A store that could not be asked (reason 'store-unavailable') counted nothing: its numbers are
    // no quota, and `r=0` would tell the client it spent one.
    if (this.format === false || decision.policy === '' || decision.reason === 'store-unavailable') {
      return false;
    }
    if (plan !== undefined) this.resolve(decision, plan);
    let limits = decision.limits.length === 0 ? [decision] : decision.limits;
    if (this.hidesShadows) {
      limits = limits.filter((d) => d.shadow !== true);
      // Every limit that applied is in shadow mode: nothing to tell the client.
      if (limits.length === 0) return false;
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
        return true;
      }
      case 'draft-7':
        set(res, 'RateLimit-Policy', this.policy(limits));
        set(
          res,
          'RateLimit',
          `limit=${decision.limit}, remaining=${decision.remaining}, reset=${resetSeconds(decision)}`,
        );
        return true;
      case 'draft-6':
        set(res, 'RateLimit-Policy', this.policy(limits));
        set(res, 'RateLimit-Limit', String(decision.limit));
        set(res, 'RateLimit-Remaining', String(decision.remaining));
        set(res, 'RateLimit-Reset', String(resetSeconds(decision)));
        return true;
      case 'legacy':
        set(res, 'X-RateLimit-Limit', String(decision.limit));
        set(res, 'X-RateLimit-Remaining', String(decision.remaining));
        set(res, 'X-RateLimit-Reset', String(resetSeconds(decision)));
        return true;
    }
  }

  /**
   * Sets each per-request limit's policy to the plan of this request. Synchronous between here
   * and the write, so concurrent requests on other plans cannot interleave.
   */
  private resolve(decision: Decision, plan: PlanOf): void {
    const limits = decision.limits.length === 0 ? [decision] : decision.limits;
    for (const d of limits) {
      const item = this.byName.get(d.policy);
      const algorithm = item?.plans === undefined ? undefined : plan(d.policy);
      if (item === undefined || item.plans === undefined || algorithm === undefined) continue;
      let policy = item.plans.get(algorithm.fingerprint);
      if (policy === undefined) {
        policy = this.quota(item.quoted, algorithm);
        if (item.plans.size >= PLAN_POLICIES) item.plans.clear();
        item.plans.set(algorithm.fingerprint, policy);
      }
      item.policy = policy;
    }
  }

  /** The policy list of the limits that applied (a limit whose key was `undefined` did not) and are shown. */
  private policy(limits: readonly Decision[]): string {
    if (limits.length === this.count && !this.planned) return this.fullPolicy;
    let value = '';
    for (let i = 0; i < limits.length; i++) {
      const policy = this.item(limits[i]!.policy).policy;
      value = i === 0 ? policy : `${value}, ${policy}`;
    }
    return value;
  }

  private item(name: string): LimitHeader {
    // A decision from outside this middleware's limits (a shedder's) gets its header made on demand.
    return this.byName.get(name) ?? { quoted: sfString(name), policy: sfString(name), plans: undefined };
  }
}
