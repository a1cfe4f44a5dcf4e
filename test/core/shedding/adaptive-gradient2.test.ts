import { describe, expect, it } from 'vitest';
import {
  type Gradient2State,
  gradient2,
  gradient2Params,
  gradient2Start,
  gradient2Update,
} from '../../../packages/core/src/adaptive/gradient2.js';
import { win } from './adaptive-helpers.js';

function run(
  state: Gradient2State,
  windows: Parameters<typeof gradient2Update>[1][],
  params: ReturnType<typeof gradient2Params>,
) {
  const out: Gradient2State[] = [];
  let s = state;
  for (const w of windows) {
    s = gradient2Update(s, w, params);
    out.push(s);
  }
  return out;
}

describe('Gradient2 (Netflix concurrency-limits Gradient2Limit)', () => {
  it('follows the published formula window by window (smoothing 0.2, tolerance 1.5, queueSize 4)', () => {
    const params = gradient2Params({ initialLimit: 100, minLimit: 1 });
    const steps = run(
      gradient2Start(params, 0),
      [
        // 1. long = 10 (warm-up mean of 1); gradient = clamp(1.5 × 10/10 = 1.5) = 1;
        //    new = 100 × 1 + 4 = 104; 100 × 0.8 + 104 × 0.2 = 100.8
        win(10, 100),
        // 2. long = (10 + 20)/2 = 15; gradient = min(1, 1.5 × 15/20 = 1.125) = 1;
        //    new = 104.8; 100.8 × 0.8 + 104.8 × 0.2 = 80.64 + 20.96 = 101.6
        win(20, 100),
        // 3. long = 70/3 = 23.33; gradient = 1.5 × 23.33/40 = 0.875; new = 101.6 × 0.875 + 4 = 92.9;
        //    101.6 × 0.8 + 92.9 × 0.2 = 81.28 + 18.58 = 99.86
        win(40, 101),
        // 4. 40 in flight < 99.86 / 2: the app does not use the limit → holds; long = 80/4 = 20
        //    (20/10 = 2 is not > 2: no cut)
        win(10, 40),
        // 5. long = 85/5 = 17; 17/5 = 3.4 > 2 → long × 0.9 = 15.3; gradient = min(1, 1.5 × 15.3/5) = 1;
        //    new = 103.86; 99.86 × 0.8 + 103.86 × 0.2 = 79.888 + 20.772 = 100.66
        win(5, 99),
      ],
      params,
    );
    const expected = [100.8, 101.6, 99.86, 99.86, 100.66];
    steps.forEach((s, i) => {
      expect(s.estimate).toBeCloseTo(expected[i]!, 9);
    });
    const longs = [10, 15, 70 / 3, 20, 15.3];
    steps.forEach((s, i) => {
      expect(s.longRtt).toBeCloseTo(longs[i]!, 9);
    });
  });

  it('after the 10-window warm-up the long RTT is an exponential average over longWindow (f = 2/601), and the gradient floors at 0.5', () => {
    const params = gradient2Params({ initialLimit: 100, minLimit: 1 });
    // Ten app-limited windows at 10 ms: the limit holds at 100, long = 10.
    const warm = run(
      gradient2Start(params, 0),
      Array.from({ length: 10 }, () => win(10, 1)),
      params,
    ).at(-1)!;
    expect(warm).toMatchObject({ estimate: 100, longRtt: 10, warm: 10 });
    // long = 10 × (1 − 2/601) + 100 × 2/601 = 10.2995; gradient = max(0.5, 1.5 × 10.2995/100 = 0.154) = 0.5;
    // new = 100 × 0.5 + 4 = 54; 100 × 0.8 + 54 × 0.2 = 90.8
    const next = gradient2Update(warm, win(100, 100), params);
    expect(next.longRtt).toBeCloseTo(10 + (90 * 2) / 601, 9);
    expect(next.estimate).toBeCloseTo(90.8, 9);
  });

  it('stays within [minLimit, maxLimit] (defaults 20 and 200) and ignores drops, as Netflix does', () => {
    const params = gradient2Params();
    // 1. app-limited (1 in flight): long = 10, the limit holds at 20.
    // 2. long = (10 + 1000)/2 = 505; gradient = 1.5 × 505/1000 = 0.7575; new = 20 × 0.7575 + 4 = 19.15;
    //    20 × 0.8 + 19.15 × 0.2 = 19.83 → clamped to minLimit 20.
    const [seeded, slow] = run(gradient2Start(params, 0), [win(10, 1), win(1000, 20)], params);
    expect(slow!.estimate).toBe(20);
    // Without the floor it would go below: minLimit 1 gives 19.83.
    const free = gradient2Params({ minLimit: 1 });
    expect(run(gradient2Start(free, 0), [win(10, 1), win(1000, 20)], free)[1]!.estimate).toBeCloseTo(
      19.83,
      9,
    );
    expect(gradient2Update(seeded!, win(undefined, 20, true), params)).toBe(seeded);
    const capped = gradient2Params({ initialLimit: 200 });
    expect(gradient2Update(gradient2Start(capped, 0), win(10, 200), capped).estimate).toBe(200); // 200.8 → 200
  });

  it('as a controller: the limit in force is the integer part, the no-load RTT the long RTT', () => {
    const c = gradient2({ initialLimit: 100, minLimit: 1, windowSamples: 1, minWindow: 1, maxWindow: 1 });
    let s = c.start(0, 0);
    expect(c.rttNoLoad(s)).toBeUndefined();
    s = c.update(s, { start: 0, end: 10, inFlight: 100, dropped: false }, 0); // closes [0, 1]: 100.8
    expect(c.limit(s)).toBe(100);
    expect(c.rttNoLoad(s)).toBe(10);
  });
});
