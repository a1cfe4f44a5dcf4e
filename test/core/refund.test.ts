import {
  type Algorithm,
  fixedWindow,
  gcra,
  leakyBucketQueue,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fields, T0 } from './helpers.js';

// Refund is how a Redis Cluster batch split across slots gives back what a refused request took
// in the slots that admitted it, and how delay mode gives back a held slot. The contract: a
// consume followed by its refund at the same instant leaves every later decision exactly as if
// the request had never happened.
const algorithms: [string, Algorithm][] = [
  ['token bucket', tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 1000 }) as Algorithm],
  [
    'token bucket, stepped',
    tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 1000, refill: 'stepped' }) as Algorithm,
  ],
  ['token bucket, strict', tokenBucket({ capacity: 5, refillInterval: 1000, strict: true }) as Algorithm],
  ['gcra', gcra({ rate: 3, period: 1000, burst: 4 }) as Algorithm],
  ['fixed window', fixedWindow({ limit: 5, window: 1000 }) as Algorithm],
  ['sliding window log', slidingWindowLog({ limit: 5, window: 1000 }) as Algorithm],
  ['sliding window counter', slidingWindowCounter({ limit: 5, window: 1000 }) as Algorithm],
  [
    'sliding window counter, precision 4',
    slidingWindowCounter({ limit: 5, window: 1000, precision: 4 }) as Algorithm,
  ],
  ['leaky bucket queue', leakyBucketQueue({ rate: 3, period: 1000, burst: 2, queue: 3 }) as Algorithm],
];

const trace = fc.array(fc.record({ advance: fc.nat(700), cost: fc.integer({ min: 1, max: 3 }) }), {
  minLength: 2,
  maxLength: 40,
});

describe('refund', () => {
  for (const [name, algorithm] of algorithms) {
    it(`${name}: consume then refund at the same instant changes nothing that follows`, () => {
      fc.assert(
        fc.property(trace, fc.nat(), (all, pick) => {
          const undone = pick % all.length;
          let with_: unknown;
          let without: unknown;
          let now = T0;
          for (let i = 0; i < all.length; i++) {
            const { advance, cost } = all[i]!;
            now += advance;
            if (i === undone) {
              const step = algorithm.consume(with_, now, cost, name);
              if (!step.decision.allowed) return; // only admitted units are refunded
              with_ = algorithm.refund!(step.state, now, cost);
              continue;
            }
            const a = algorithm.consume(with_, now, cost, name);
            const b = algorithm.consume(without, now, cost, name);
            expect(fields(a.decision)).toEqual(fields(b.decision));
            with_ = a.state;
            without = b.state;
          }
        }),
        { numRuns: 300, seed: 20261122 },
      );
    });
  }

  it('a fixed window refund after its window has passed gives back nothing (never over-admits)', () => {
    const algorithm = fixedWindow({ limit: 2, window: 1000 });
    const first = algorithm.consume(undefined, T0, 1, 'w');
    const later = algorithm.consume(first.state, T0 + 1000, 2, 'w');
    expect(algorithm.refund!(later.state!, T0, 1)).toEqual(later.state);
  });

  it('a sliding log refund removes only its own entry', () => {
    const algorithm = slidingWindowLog({ limit: 5, window: 1000 });
    let state = algorithm.consume(undefined, T0, 1, 'l').state;
    state = algorithm.consume(state, T0 + 10, 2, 'l').state;
    expect(algorithm.refund!(state!, T0 + 10, 2)).toEqual([T0, 1]);
    expect(algorithm.refund!(state!, T0 + 5, 1)).toEqual(state);
  });
});
