import { type Algorithm, fingerprint, slackFor } from '../algorithm.js';
import type { AlgorithmParam } from '../algorithm-kinds.js';
import { admitted, ceilMs, type Decision, decide, retryMs } from '../decision.js';
import { assertSpan, type Duration, parseDuration } from '../duration.js';
import { assertUnit } from '../time-range.js';
import { assertKnownOptions, integerOption, requireOption } from '../validate.js';

export interface GcraOptions {
  /** Requests admitted per `period` in the long run. Integer ≥ 1. */
  rate: number;
  /** The period of `rate`: ms or `'1s'`, `'1m'`… */
  period: Duration;
  /**
   * Requests that may arrive at once. Integer ≥ 1. This is redis-cell's `max_burst + 1`: redis-cell
   * counts the burst beyond the first request, sluice counts the whole burst.
   * @default rate
   */
  burst?: number;
}

const KNOWN = ['rate', 'period', 'burst'] as const satisfies readonly (keyof GcraOptions)[];

/** The theoretical arrival time (TAT): when the meter would be empty again. */
export type GcraState = number;

/**
 * Generic cell rate algorithm (leaky bucket as a meter), with the semantics of redis-cell's
 * `CL.THROTTLE`: exact `retryAfter` and `resetAfter`, one number of state.
 * @example gcra({ rate: 10, period: '1s', burst: 20 })
 */
export function gcra(options: GcraOptions): Algorithm<GcraState> {
  assertKnownOptions('gcra', options, KNOWN);
  const rate = integerOption('rate', requireOption('rate', options.rate));
  const period = parseDuration('period', requireOption('period', options.period));
  const burst = integerOption('burst', options.burst ?? rate);
  const params = { rate, period, burst } satisfies Record<AlgorithmParam<'gcra'>, number>;
  const emission = period / rate;
  assertUnit('period', options.period, emission, 'period / rate (the emission interval)');
  const tolerance = emission * burst; // redis-cell's delay variation tolerance
  assertSpan('period', options.period, tolerance, 'gcra: burst × period / rate');
  const { evaluate, nextTat } = gcraRules(rate, period, burst);

  return {
    kind: 'gcra',
    params,
    fingerprint: fingerprint('gcra', params),
    limit: burst,
    window: tolerance,
    consume(state, now, cost, policy) {
      const decision = evaluate(state, now, cost, policy, true);
      return { state: decision.allowed ? nextTat(state, now, cost) : state, decision };
    },
    peek: (state, now, cost, policy) => evaluate(state, now, cost, policy, false),
    ttl: (state, now) => state - now,
    refund: (state, now, cost) => {
      const tat = state - emission * cost;
      return tat <= now ? undefined : tat;
    },
  };
}

/**
 * GCRA's arithmetic for one `rate`, `period` and `burst`: the pure steps above and the memory
 * store's in-place step (`memory-in-place.ts`, which writes the new TAT into the number it holds without a
 * transition object) are both built from it, so they cannot drift apart.
 */
export function gcraRules(rate: number, period: number, burst: number) {
  const emission = period / rate;
  const tolerance = emission * burst;
  const slack = slackFor(emission);
  // The TAT after admitting `cost` at `now`.
  const nextTat = (state: GcraState | undefined, now: number, cost: number): number =>
    (state === undefined || state < now ? now : state) + emission * cost;
  // `consuming` false reports the meter as it stands (peek); true reports it after this request.
  const evaluate = (
    state: GcraState | undefined,
    now: number,
    cost: number,
    policy: string,
    consuming: boolean,
  ): Decision => {
    const tat = state === undefined || state < now ? now : state;
    const increment = emission * cost;
    const newTat = tat + increment;
    const wait = newTat - tolerance - now;
    const allowed = wait <= slack;
    const ttl = (allowed && consuming ? newTat : tat) - now;
    const headroom = tolerance - ttl;
    // Clamped to the burst (a headroom of the whole tolerance plus the slack).
    const remaining = Math.min(burst, Math.max(0, Math.floor((headroom + slack) / emission)));
    if (allowed) return admitted(burst, remaining, ceilMs(ttl, slack), policy);
    const never = increment > tolerance + slack;
    return decide(
      false,
      burst,
      remaining,
      ceilMs(ttl, slack),
      never ? -1 : retryMs(wait, slack),
      0,
      policy,
      never ? 'cost-exceeds-limit' : 'rate-limited',
    );
  };
  return { evaluate, nextTat };
}
