import { slidingWindowCounter } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { allow, Run, refuse } from '../helpers.js';

const P = 'sliding-window-counter';

/** Requests admitted in [from, to) when `run` tried one request at every ms in `times`. */
function admittedIn(admitted: readonly number[], from: number, to: number): number {
  return admitted.filter((t) => t >= from && t < to).length;
}

describe('slidingWindowCounter', () => {
  it("Cloudflare's example: 42 in the previous minute, 18 in this one, 15 s in: 49.5 used", () => {
    const run = new Run(slidingWindowCounter({ limit: 50, window: '1m' }));
    // The state as Cloudflare describes it: [minute index, this minute's count, the last one's].
    run.state = [run.base / 60_000 + 1, 18, 42];
    // 18 + 42 × 45/60 = 49.5: one more would make 50.5. The weight of the previous minute falls
    // to 31/42 at 60 s × 11/42 = 15.714 s into the minute: retry in 715 ms.
    expect(run.at(75_000)).toEqual(refuse(50, 0, 105_000, 715, P));
    expect(run.fork().at(75_714)).toEqual(refuse(50, 0, 104_286, 1, P));
    expect(run.at(75_715)).toEqual(allow(50, 0, 104_285, P));
  });

  it('precision 4 counts in quarter windows and weighs only the oldest quarter', () => {
    const run = new Run(slidingWindowCounter({ limit: 8, window: 1000, precision: 4 }));
    expect(run.at(0, 4)).toEqual(allow(8, 4, 1250, P));
    expect(run.at(300, 4)).toEqual(allow(8, 0, 1200, P));
    // At 999 both quarters are whole; at 1000 the first becomes the weighted oldest quarter and
    // its weight must fall to 3/4 (62.5 ms into the quarter) for a request to fit.
    expect(run.at(999)).toEqual(refuse(8, 0, 501, 64, P));
    expect(run.fork().at(1062)).toMatchObject({ allowed: false, retryAfter: 1 });
    expect(run.at(1063)).toEqual(allow(8, 0, 1187, P));
  });

  it('documented bound (precision 1): it can admit more than limit in a window, never 2 × limit', () => {
    const run = new Run(slidingWindowCounter({ limit: 10, window: 1000 }));
    const admitted: number[] = [];
    for (let i = 0; i < 10; i++) if (run.at(999).allowed) admitted.push(999);
    for (let t = 1000; t < 3000; t++) if (run.at(t).allowed) admitted.push(t);
    let worst = 0;
    for (let from = 0; from < 3000; from++) worst = Math.max(worst, admittedIn(admitted, from, from + 1000));
    expect(worst).toBeGreaterThan(10);
    expect(worst).toBeLessThan(20);
  });

  it('documented bound: a finer precision does not help a burst at the end of the oldest sub-window', () => {
    const run = new Run(slidingWindowCounter({ limit: 10, window: 1000, precision: 10 }));
    const admitted: number[] = [];
    for (let i = 0; i < 10; i++) if (run.at(99).allowed) admitted.push(99);
    for (let t = 100; t < 3000; t++) if (run.at(t).allowed) admitted.push(t);
    let worst = 0;
    for (let from = 0; from < 3000; from++) worst = Math.max(worst, admittedIn(admitted, from, from + 1000));
    expect(worst).toBeGreaterThan(10);
    expect(worst).toBeLessThan(20);
  });

  it('a finer precision tracks evenly spread traffic closely', () => {
    // One request every 10 ms against 50 per second: the exact count in any window is 100, so
    // the limiter should admit close to 50 per window at every precision; finer is closer.
    const worstFor = (precision: number) => {
      const run = new Run(slidingWindowCounter({ limit: 50, window: 1000, precision }));
      const admitted: number[] = [];
      for (let t = 0; t < 10_000; t += 10) if (run.at(t).allowed) admitted.push(t);
      let worst = 0;
      for (let from = 0; from < 9000; from += 5)
        worst = Math.max(worst, admittedIn(admitted, from, from + 1000));
      return worst;
    };
    expect(worstFor(60)).toBeLessThanOrEqual(51);
    expect(worstFor(1)).toBeLessThanOrEqual(75);
  });

  it('a cost above the limit is refused for good, and nothing is stored', () => {
    const run = new Run(slidingWindowCounter({ limit: 3, window: 1000 }));
    expect(run.at(0, 4)).toEqual(refuse(3, 3, 0, -1, P, 'cost-exceeds-limit'));
    expect(run.state).toBeUndefined();
  });

  it('state expires once every counted sub-window has left the window', () => {
    const run = new Run(slidingWindowCounter({ limit: 3, window: 1000, precision: 2 }));
    run.at(100); // sub-window [0, 500) weighs on the estimate until 1500
    expect(run.algorithm.ttl(run.state!, run.base + 1499)).toBe(1);
    expect(run.algorithm.ttl(run.state!, run.base + 1500)).toBe(0);
    expect(run.peek(1500)).toEqual(allow(3, 3, 0, P));
  });
});
