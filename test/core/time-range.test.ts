import {
  type Decision,
  ErrorCode,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  SluiceError,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { MAX_TIME, MIN_UNIT_TIME } from '@sluice/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  algorithmsAtEveryScale,
  expectHonestRefusals,
  requestsAtEveryScale,
  startAnywhere,
} from '../suites/scales.js';

function codeOf(make: () => unknown): { code: string; option: string | undefined } {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    return { code: (error as SluiceError).code, option: (error as SluiceError).option };
  }
  return { code: 'nothing thrown', option: undefined };
}

describe('regression: a refused decision never carries retryAfter 0 (issue 11, 3.4)', () => {
  it('an interval per unit shorter than the arithmetic can honour is refused at creation', () => {
    // It refused a fresh key with retryAfter 0: at epoch scale, now - 1e-4 ms is now.
    expect(codeOf(() => tokenBucket({ capacity: 10, refillInterval: 0.0001 }))).toEqual({
      code: ErrorCode.INVALID_OPTION,
      option: 'refillInterval',
    });
    const refused: [string, () => unknown][] = [
      ['refillInterval', () => tokenBucket({ capacity: 10, refillAmount: 2000, refillInterval: 1 })],
      ['refillInterval', () => tokenBucket({ capacity: 1, refillInterval: 0.0005, refill: 'stepped' })],
      ['period', () => gcra({ rate: 2000, period: 1 })],
      ['period', () => leakyBucketQueue({ rate: 2000, period: 1, queue: 1 })],
      ['window', () => fixedWindow({ limit: 1, window: 0.0005 })],
      ['window', () => slidingWindowLog({ limit: 1, window: 0.0005 })],
      ['precision', () => slidingWindowCounter({ limit: 1, window: 0.5, precision: 1000 })],
    ];
    for (const [option, make] of refused) {
      expect(codeOf(make), String(make)).toEqual({ code: ErrorCode.INVALID_OPTION, option });
    }
    // The shortest accepted: 2^-10 ms (1024 units per ms per key).
    const accepted = [
      () => tokenBucket({ capacity: 10, refillAmount: 1024, refillInterval: 1 }),
      () => tokenBucket({ capacity: 1, refillInterval: MIN_UNIT_TIME, refill: 'stepped' }),
      () => gcra({ rate: 1024, period: 1 }),
      () => leakyBucketQueue({ rate: 1024, period: 1, queue: 1 }),
      () => fixedWindow({ limit: 1, window: MIN_UNIT_TIME }),
      () => slidingWindowLog({ limit: 1, window: MIN_UNIT_TIME }),
      () => slidingWindowCounter({ limit: 1, window: 1, precision: 1000 }),
    ];
    for (const make of accepted) expect(make).not.toThrow();
  });

  it('a time outside 0 … MAX_TIME is refused at call time with ERR_SLUICE_INVALID_TIME', () => {
    const limiter = new Limiter({ algorithm: tokenBucket({ capacity: 10, refillInterval: 1000 }) });
    // It refused with retryAfter 0: 1e300 - 1000 is 1e300.
    for (const now of [1e300, MAX_TIME + 1, -1, -1e300]) {
      expect(
        codeOf(() => limiter.checkSync('k', { now })),
        String(now),
      ).toEqual({
        code: ErrorCode.INVALID_TIME,
        option: 'now',
      });
      expect(codeOf(() => limiter.peekSync('k', { now })).code).toBe(ErrorCode.INVALID_TIME);
    }
    expect((limiter.checkSync('k', { now: MAX_TIME }) as Decision).allowed).toBe(true);
    expect((limiter.checkSync('another', { now: 0 }) as Decision).allowed).toBe(true);
    // MAX_TIME is 2109-05-15: far enough for replays, near enough that a double still resolves
    // 2^-11 ms, half the shortest interval per unit.
    expect(new Date(MAX_TIME).getUTCFullYear()).toBe(2109);
  });
});

describe('every algorithm, at every scale the options and times accept (fast-check, seeded)', () => {
  it('refused ⇒ retryAfter ≥ 1, or -1 for a cost above the limit; and waiting retryAfter admits', async () => {
    await fc.assert(
      fc.asyncProperty(
        algorithmsAtEveryScale,
        startAnywhere,
        requestsAtEveryScale,
        (algorithm, from, requests) =>
          expectHonestRefusals(new Limiter({ algorithm, store: new MemoryStore() }), 'k', from, requests),
      ),
      { numRuns: 400, seed: 20_261_123 },
    );
  });
});
