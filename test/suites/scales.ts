import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  type Limiter,
  leakyBucketQueue,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { MAX_TIME, MIN_UNIT_TIME } from '@sluice/core/adapter';
import fc from 'fast-check';
import { expect } from 'vitest';

// Algorithms at every scale their options accept, and times anywhere in 0 … MAX_TIME: where the
// doubles of the arithmetic round the most (issue 11, 3.4: refusals with retryAfter 0).

/** A unit of admission from the shortest accepted to slow ones, often at the edge. */
export const unit = fc.oneof(
  fc.constant(MIN_UNIT_TIME),
  fc.double({ min: MIN_UNIT_TIME, max: 0.02, noNaN: true }),
  fc.double({ min: 0.02, max: 100, noNaN: true }),
  fc.integer({ min: 1, max: 86_400_000 }),
);
const count = fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 2000 }));

/** `amount × unit`, or the product raised to where `… / amount` is not below MIN_UNIT_TIME. */
function times(amount: number, per: number): number {
  const product = amount * per;
  return product / amount < MIN_UNIT_TIME ? amount * MIN_UNIT_TIME : product;
}

export const algorithmsAtEveryScale: fc.Arbitrary<Algorithm> = fc.oneof(
  fc
    .record({
      capacity: count,
      amount: count,
      unit,
      refill: fc.constantFrom('continuous' as const, 'stepped' as const),
      strict: fc.boolean(),
    })
    .map(({ capacity, amount, unit: per, refill, strict }) =>
      tokenBucket({
        capacity,
        refillAmount: amount,
        refillInterval: refill === 'stepped' ? per : times(amount, per),
        refill,
        strict,
      }),
    ),
  fc
    .record({ rate: count, unit, burst: count })
    .map(({ rate, unit: per, burst }) => gcra({ rate, period: times(rate, per), burst })),
  fc
    .record({ rate: count, unit, burst: count, queue: fc.integer({ min: 0, max: 20 }) })
    .map(({ rate, unit: per, burst, queue }) =>
      leakyBucketQueue({ rate, period: times(rate, per), burst, queue }),
    ),
  fc.record({ limit: count, window: unit }).map((o) => fixedWindow(o)),
  fc.record({ limit: count, window: unit }).map((o) => slidingWindowLog(o)),
  fc
    .record({ limit: count, unit, precision: fc.integer({ min: 1, max: 1000 }) })
    .map(({ limit, unit: per, precision }) =>
      slidingWindowCounter({ limit, window: times(precision, per), precision }),
    ),
);

/** Anywhere in the accepted range, with weight on today and on its far end. */
export const startAnywhere = fc.oneof(
  fc.integer({ min: 1_600_000_000_000, max: 2_000_000_000_000 }),
  fc.double({ min: 0, max: MAX_TIME, noNaN: true }),
  fc.double({ min: MAX_TIME / 2, max: MAX_TIME, noNaN: true }),
);
const gap = fc.oneof(
  fc.constant(0),
  fc.double({ min: 0, max: 0.01, noNaN: true }),
  fc.double({ min: 0, max: 5, noNaN: true }),
  fc.integer({ min: 0, max: 10_000 }),
);

/** Requests: a gap (often tiny) and a drawn cost (above 2000: one above the limit). */
export const requestsAtEveryScale = fc.array(fc.record({ gap, cost: fc.integer({ min: 1, max: 2100 }) }), {
  minLength: 1,
  maxLength: 60,
});

/**
 * Runs the requests on one key and checks every refusal: retryAfter ≥ 1, or -1 for a cost above
 * the limit (reason 'cost-exceeds-limit'); and the same request is admitted retryAfter ms later.
 */
export async function expectHonestRefusals(
  limiter: Limiter,
  key: string,
  from: number,
  requests: readonly { gap: number; cost: number }[],
): Promise<void> {
  const algorithm = limiter.limits[0]!.algorithm;
  let now = from;
  for (const { gap: dt, cost: drawn } of requests) {
    now = Math.min(MAX_TIME, now + dt);
    const cost = drawn > 2000 ? algorithm.limit + 1 : 1 + (drawn % algorithm.limit);
    const d = await limiter.check(key, { now, cost });
    if (d.allowed) continue;
    const where = `${algorithm.kind} ${JSON.stringify(algorithm.params)} at ${now}, cost ${cost}: ${JSON.stringify(d)}`;
    if (cost > algorithm.limit) {
      expect([d.retryAfter, d.reason], where).toEqual([-1, 'cost-exceeds-limit']);
      continue;
    }
    expect(d.retryAfter, where).toBeGreaterThanOrEqual(1);
    if (now + d.retryAfter <= MAX_TIME) {
      const later: Decision = await limiter.peek(key, { now: now + d.retryAfter, cost });
      expect(later.allowed, `${where}; ${d.retryAfter} ms later`).toBe(true);
    }
  }
}
