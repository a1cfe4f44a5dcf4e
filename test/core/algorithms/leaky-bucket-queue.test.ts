import { leakyBucketQueue } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { allow, Run, refuse } from '../helpers.js';

const P = 'leaky-bucket-queue';

describe('leakyBucketQueue', () => {
  it('delays 0, interval, 2 × interval…, then refuses with an exact retryAfter', () => {
    const run = new Run(leakyBucketQueue({ rate: 4, period: 1000, queue: 3 }));
    expect([0, 0, 0, 0].map(() => run.at(0).delay)).toEqual([0, 250, 500, 750]);
    expect(run.at(0)).toEqual(refuse(4, 0, 1000, 250, P));
    expect(run.fork().at(249)).toEqual(refuse(4, 0, 751, 1, P));
    expect(run.at(250)).toEqual(allow(4, 0, 1000, P, 750));
  });

  it('burst requests go at once; only those beyond wait (nginx burst + delay)', () => {
    const run = new Run(leakyBucketQueue({ rate: 2, period: 1000, burst: 2, queue: 2 }));
    expect(run.at(0)).toEqual(allow(4, 3, 500, P, 0));
    expect(run.at(0)).toEqual(allow(4, 2, 1000, P, 0));
    expect(run.at(0)).toEqual(allow(4, 1, 1500, P, 500));
    expect(run.at(0)).toEqual(allow(4, 0, 2000, P, 1000));
    expect(run.at(0)).toEqual(refuse(4, 0, 2000, 500, P));
  });

  it('maxDelay alone bounds the queue', () => {
    const run = new Run(leakyBucketQueue({ rate: 1, period: 1000, maxDelay: 2500 }));
    expect(run.algorithm.limit).toBe(3);
    expect([0, 0, 0].map(() => run.at(0).delay)).toEqual([0, 1000, 2000]);
    expect(run.at(0)).toEqual(refuse(3, 0, 3000, 1000, P));
  });

  it('with both bounds, the tighter one applies, and retryAfter waits for it', () => {
    const run = new Run(leakyBucketQueue({ rate: 1, period: 1000, queue: 10, maxDelay: 1500 }));
    expect(run.at(0)).toEqual(allow(2, 1, 1000, P, 0));
    expect(run.at(0)).toEqual(allow(2, 0, 2000, P, 1000));
    expect(run.at(0)).toEqual(refuse(2, 0, 2000, 500, P));
    expect(run.fork().at(499)).toMatchObject({ allowed: false, retryAfter: 1 });
    expect(run.at(500)).toEqual(allow(2, 0, 2500, P, 1500));
  });

  it('regression: a maxDelay tighter than the queue reports the units it can really hold, and a cost beyond them is refused for good (it reported limit 11, remaining 9 while refusing, and a retryAfter no wait could honour)', () => {
    // Before: limit 11 and remaining 9 for a queue that refused the next request, and a cost of 3
    // refused with retryAfter 1000 although no wait could ever admit it.
    const run = new Run(leakyBucketQueue({ rate: 1, period: 1000, queue: 10, maxDelay: 1500 }));
    expect(run.algorithm.limit).toBe(2);
    expect(run.peek(0)).toEqual(allow(2, 2, 0, P));
    expect(run.at(0, 3)).toEqual(refuse(2, 2, 0, -1, P, 'cost-exceeds-limit'));
    expect(run.at(0, 2)).toEqual(allow(2, 0, 2000, P, 1000));
  });

  it('queue 0 never delays: a plain meter', () => {
    const run = new Run(leakyBucketQueue({ rate: 1, period: 1000, burst: 2, queue: 0 }));
    expect(run.at(0)).toEqual(allow(2, 1, 1000, P));
    expect(run.at(0)).toEqual(allow(2, 0, 2000, P));
    expect(run.at(0)).toEqual(refuse(2, 0, 2000, 1000, P));
  });

  it('a cost above burst + queue is refused for good and takes no place', () => {
    const run = new Run(leakyBucketQueue({ rate: 1, period: 1000, queue: 2 }));
    expect(run.at(0, 4)).toEqual(refuse(3, 3, 0, -1, P, 'cost-exceeds-limit'));
    expect(run.state).toBeUndefined();
    expect(run.at(0, 3)).toEqual(allow(3, 0, 3000, P, 2000));
  });

  it('refund gives a held place back to the next arrival', () => {
    const run = new Run(leakyBucketQueue({ rate: 1, period: 1000, queue: 2 }));
    for (let i = 0; i < 3; i++) run.at(0);
    run.state = run.algorithm.refund!(run.state!, run.base + 100, 1);
    expect(run.at(100)).toEqual(allow(3, 0, 2900, P, 1900));
    expect(run.algorithm.refund!(run.base + 500, run.base + 100, 1)).toBeUndefined();
  });
});
