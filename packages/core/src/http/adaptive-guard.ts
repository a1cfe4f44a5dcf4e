import {
  ADAPTIVE_CONCURRENCY_OPTIONS,
  AdaptiveConcurrency,
  type AdaptiveConcurrencyOptions,
  type AdaptiveLease,
} from '../adaptive/adaptive-concurrency.js';
import type { Lease } from '../concurrency/lease.js';
import type { Decision } from '../decision.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions, functionOption, oneOfOption } from '../validate.js';
import { GUARD_OPTIONS, type HttpGuardOptions, type Priority } from './guard-options.js';
import { engineOf, HttpGuard, pick } from './guards.js';
import { type AdapterDefaults, Reporter } from './reporter.js';

/**
 * `adaptiveConcurrency()`: a concurrency limit found from latency (503 past it), with priority
 * partitions. The options that build the limiter are `AdaptiveConcurrency`'s.
 */
export interface HttpAdaptiveConcurrencyOptions<Req>
  extends HttpGuardOptions<Req>,
    AdaptiveConcurrencyOptions {
  /**
   * A limiter built elsewhere: to share one limit between middlewares (an app-wide one and a
   * route's with another priority), or to read its `limit` and `partitions()` for metrics.
   * Instead of `controller`, `partitions`, `demandWindow`, `retryAfter`, `random`, `clock`,
   * `name`, `ttl`, `timeout` and `overloadSignal`.
   */
  limiter?: AdaptiveConcurrency;
  /**
   * The request's partition: one of the limiter's `partitions`, or a function of the request
   * returning one. Required with partitions; refused without.
   */
  priority?: Priority<Req>;
  /**
   * What a sent response tells the controller: `'latency'` (its time, from arrival to the
   * response's end), `'drop'` (the controllers back off: the app's mark of a request that failed
   * for want of capacity, a downstream's refusal, a timeout answered as such) or `'ignore'`
   * (nothing: a request that did no work, such as one a later rate limit refused at once, whose
   * short time would read as a fast service).
   * @default 503 and 504 `'drop'`, 429 `'ignore'`, any other status `'latency'`
   */
  outcome?: (status: number, req: Req) => ResponseOutcome;
  /**
   * A request whose client left before its response was sent: `'drop'` counts it as a drop (under
   * load, clients leave because they timed out), `'ignore'` frees its slot and tells the controller
   * nothing (clients that leave for their own reasons would otherwise shrink the limit).
   * @default 'drop'
   */
  clientGone?: 'drop' | 'ignore';
  /** Called for every request the guard decides on, admitted or refused, before `onLimited`. For metrics. */
  onDecision?: (req: Req, decision: Decision) => void;
}

/** What a response tells the adaptive controller (see `outcome`). */
export type ResponseOutcome = 'latency' | 'drop' | 'ignore';

/** Options that build the adaptive limiter (all but `limiter` replaced by it). */
export const ADAPTIVE_ENGINE = [
  'limiter',
  ...ADAPTIVE_CONCURRENCY_OPTIONS,
] as const satisfies readonly (keyof HttpAdaptiveConcurrencyOptions<unknown>)[];

export const ADAPTIVE_OPTIONS = [
  ...GUARD_OPTIONS,
  ...ADAPTIVE_ENGINE,
  'priority',
  'outcome',
  'clientGone',
  'onDecision',
] as const satisfies readonly (keyof HttpAdaptiveConcurrencyOptions<unknown>)[];

type AssertNever<T extends never> = T;
/** Compile-time check: an option added to the interface but not to `ADAPTIVE_OPTIONS` is an error here. */
export type UnlistedAdaptiveOptions = AssertNever<
  Exclude<keyof HttpAdaptiveConcurrencyOptions<unknown>, (typeof ADAPTIVE_OPTIONS)[number]>
>;

/** 503 and 504 are HTTP's words for "no capacity" and "timed out"; a 429 is a refusal, not work. */
function defaultOutcome(status: number): ResponseOutcome {
  if (status === 503 || status === 504) return 'drop';
  return status === 429 ? 'ignore' : 'latency';
}

const RELEASES: Readonly<Record<ResponseOutcome, { dropped?: boolean; ignore?: boolean }>> = {
  latency: {},
  drop: { dropped: true },
  ignore: { ignore: true },
};

/**
 * The adaptive concurrency limit for HTTP: a lease per request in its priority's partition, taken
 * on arrival and released when the response ends, reporting the request's latency (to the
 * response's end), or a drop: a status `outcome` marks, a client gone (`clientGone`), a request
 * past the limiter's `timeout`, or the limiter's `overloadSignal`.
 * @param adapterOptions the adapter's own option names (`handler`, `hook`), accepted beside the shared ones
 */
export function adaptiveGuard<Req>(
  where: string,
  options: HttpAdaptiveConcurrencyOptions<Req>,
  defaults: AdapterDefaults<Req>,
  adapterOptions: readonly string[] = [],
): HttpGuard<Req> {
  assertKnownOptions(where, options, [...ADAPTIVE_OPTIONS, ...adapterOptions]);
  const limiter = engineOf(
    options,
    'limiter',
    AdaptiveConcurrency,
    ADAPTIVE_ENGINE,
    () => new AdaptiveConcurrency(pick(options, ADAPTIVE_CONCURRENCY_OPTIONS) as AdaptiveConcurrencyOptions),
  );
  const outcome = functionOption('outcome', options.outcome) ?? defaultOutcome;
  const gone = RELEASES[oneOfOption('clientGone', options.clientGone ?? 'drop', ['drop', 'ignore'])];
  const lease = partitionLease(options.priority, limiter);
  const release = (taken: Lease, req: Req, status: () => number, finished: boolean): void => {
    const adaptive = taken as AdaptiveLease;
    if (!finished) {
      adaptive.release(gone);
      return;
    }
    const told = outcome(status(), req);
    const release = typeof told === 'string' && Object.hasOwn(RELEASES, told) ? RELEASES[told] : undefined;
    if (release === undefined) {
      adaptive.release();
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `outcome must return 'latency', 'drop' or 'ignore'; got ${describeValue(told)}`,
        { option: 'outcome', value: told },
      );
    }
    adaptive.release(release);
  };
  return HttpGuard.build(
    {
      kind: 'adaptiveConcurrency',
      name: limiter.name,
      takesLeases: true,
      lease,
      engine: { limiter },
      release,
      onDecision: functionOption('onDecision', options.onDecision),
    },
    options,
    new Reporter(options, defaults),
  );
}

/** The acquire per request: in the priority's partition, or in the one limit without partitions. */
function partitionLease<Req>(
  priority: Priority<Req> | undefined,
  limiter: AdaptiveConcurrency,
): (req: Req) => Lease {
  const names = limiter.priorities;
  if (names.length === 0) {
    if (priority !== undefined) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `priority needs partitions: give the limiter partitions ({ critical: 0.8, low: 0.2 }) or drop priority; got ${describeValue(priority)}`,
        { option: 'priority', value: priority },
      );
    }
    return () => limiter.acquire();
  }
  if (typeof priority === 'function') return (req) => limiter.acquire(priority(req));
  if (typeof priority === 'string' && names.includes(priority)) return () => limiter.acquire(priority);
  throw new SluiceError(
    priority === undefined ? ErrorCode.MISSING_OPTION : ErrorCode.INVALID_OPTION,
    `priority must be a function of the request or one of ${names.map((p) => `'${p}'`).join(', ')}; got ${describeValue(priority)}`,
    { option: 'priority', value: priority },
  );
}
