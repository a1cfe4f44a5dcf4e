import {
  type Algorithm,
  type Decision,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  tokenBucket,
} from '@sluice/core';
import { describe, expect, it } from 'vitest';

// An epoch-scale instant (Nov 2026), where a double's resolution is 2^-12 ms.
const NOW = 1_763_786_000_000.5;
const RESOLUTION = 2 ** -12;

const TIME_STATES: readonly [string, (perSecond: number) => Algorithm][] = [
  [
    'token bucket, continuous',
    (perSecond) => tokenBucket({ capacity: perSecond, refillAmount: perSecond, refillInterval: 1000 }),
  ],
  ['gcra', (perSecond) => gcra({ rate: perSecond, period: 1000 })],
  [
    'leaky bucket queue',
    (perSecond) => leakyBucketQueue({ rate: perSecond, period: 1000, burst: perSecond, queue: 0 }),
  ],
];

/** Requests admitted at one instant out of 1.3 × the limit. */
function burst(algorithm: Algorithm): number {
  const limiter = new Limiter({ algorithm, store: new MemoryStore() });
  let admitted = 0;
  for (let i = 0; i < algorithm.limit * 1.3; i++)
    if ((limiter.checkSync('k', { now: NOW }) as Decision).allowed) admitted++;
  return admitted;
}

/**
 * The README's bound for the algorithms whose state is one instant: each admission moves it by
 * the interval per unit rounded to the resolution, so the rate holds to within half a resolution
 * step per interval (and one request: the slack is less than half a unit, see `slackFor`).
 */
describe('precision of time states at high rates per key (README: High rates per key)', () => {
  it.each(TIME_STATES)('%s: a burst at one instant is within the documented bound', (_label, make) => {
    for (const perSecond of [100, 1_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]) {
      const interval = 1000 / perSecond;
      const admitted = burst(make(perSecond));
      const bound = perSecond * (RESOLUTION / 2 / interval) + 1;
      expect(Math.abs(admitted - perSecond), `${perSecond}/s: ${admitted}`).toBeLessThanOrEqual(bound);
    }
  });

  it.each(TIME_STATES)('%s: exact when the interval per unit is a whole number of ms', (_label, make) => {
    for (const perSecond of [1, 10, 100, 250, 500, 1_000]) expect(burst(make(perSecond))).toBe(perSecond);
  });

  it.each(TIME_STATES.map(([label]) => [label]))(
    '%s: the slack never admits a whole unit beyond the burst, and retryAfter stays exact',
    (label) => {
      // 1024 per ms: an interval of 2^-10 ms, exact at epoch scale, far below EPSILON (0.01 ms).
      const algorithm =
        label === 'gcra'
          ? gcra({ rate: 1024, period: 1, burst: 10 })
          : label === 'leaky bucket queue'
            ? leakyBucketQueue({ rate: 1024, period: 1, burst: 10, queue: 0 })
            : tokenBucket({ capacity: 10, refillAmount: 1024, refillInterval: 1 });
      const limiter = new Limiter({ algorithm, store: new MemoryStore() });
      const at = (now: number) => limiter.checkSync('k', { now }) as Decision;
      const decisions = Array.from({ length: 30 }, () => at(NOW));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      expect(decisions[9]).toMatchObject({ allowed: true, remaining: 0 });
      const refused = decisions[10]!;
      expect(refused).toMatchObject({ allowed: false, retryAfter: 1 });
      expect(at(NOW + refused.retryAfter).allowed).toBe(true);
    },
  );
});
