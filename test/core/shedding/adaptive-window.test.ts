import { describe, expect, it } from 'vitest';
import {
  addSample,
  openWindow,
  percentileOf,
  type RttSample,
  type WindowState,
  windowParams,
} from '../../../packages/core/src/adaptive/sample-window.js';

const rq = (start: number, end: number, inFlight = 1, dropped = false): RttSample => ({
  start,
  end,
  inFlight,
  dropped,
});

describe('sample windows (Netflix WindowedLimit)', () => {
  const params = windowParams({}, { windowSamples: 3, minWindow: 100, maxWindow: 1000 });

  it('closes on the first sample ending after the window, reporting the mean, the min and the most in flight', () => {
    let w = openWindow(params, 0);
    expect(w.end).toBe(100);
    const closed = [];
    for (const s of [rq(0, 10, 2), rq(5, 25, 5), rq(50, 101, 3)]) {
      const step = addSample(w, s, params);
      w = step.window;
      closed.push(step.closed);
    }
    expect(closed.slice(0, 2)).toEqual([undefined, undefined]);
    // RTTs 10, 20, 51: mean 27
    expect(closed[2]).toEqual({ rtt: 27, minRtt: 10, maxInFlight: 5, dropped: false, samples: 3 });
    // The next window lasts 2 × the closed window's min RTT (20 ms), raised to minWindow (100).
    expect(w.end).toBe(201);
  });

  it('a window short of windowSamples at its end stays open until it has them (Netflix discards it)', () => {
    let w = openWindow(params, 0);
    const first = addSample(w, rq(0, 150), params);
    expect(first.closed).toBeUndefined();
    expect(first.window.count).toBe(1);
    w = addSample(first.window, rq(100, 300), params).window;
    // The third sample, long after the window's end, closes it: RTTs 150, 200, 100 → mean 150.
    const third = addSample(w, rq(400, 500), params);
    expect(third.closed).toMatchObject({ rtt: 150, samples: 3 });
    expect(third.window.end).toBe(700); // 500 + 2 × min RTT 100
  });

  it('the window lasts 2 × the last min RTT within [minWindow, maxWindow]', () => {
    expect(openWindow(params, 0, 300).end).toBe(600);
    expect(openWindow(params, 0, 10).end).toBe(100);
    expect(openWindow(params, 0, 5000).end).toBe(1000);
  });

  it('drops count and mark the window but record no RTT (Netflix #176): a fast failure is not a fast request', () => {
    let w: WindowState = openWindow(params, 0);
    for (const s of [rq(0, 40), rq(10, 10.5, 1, true), rq(20, 21, 1, true)])
      w = addSample(w, s, params).window;
    const { closed } = addSample(w, rq(60, 120), params);
    // RTTs kept: 40 and 60 (the drops' 0.5 and 1 ms are not): mean 50, min 40.
    expect(closed).toEqual({ rtt: 50, minRtt: 40, maxInFlight: 1, dropped: true, samples: 4 });
  });

  it('RTTs under 100 µs (ignoreRttBelow) are ignored, as are negative ones', () => {
    let w = openWindow(params, 0);
    for (const s of [rq(0, 0.05), rq(10, 9), rq(0, 0.1)]) w = addSample(w, s, params).window;
    expect(w.count).toBe(1);
    expect(w.min).toBe(0.1);
  });

  it('a percentile window keeps its RTTs; an older state stays valid after a newer one appends', () => {
    const p50 = windowParams({}, { windowSamples: 1, minWindow: 100, maxWindow: 100 }, 0.5);
    const a = addSample(openWindow(p50, 0), rq(0, 30), p50).window;
    const b = addSample(a, rq(0, 10), p50).window;
    const c = addSample(a, rq(0, 20), p50).window; // branches from `a`, after `b` appended
    // Each closes with a 1 ms request: b holds [30, 10, 1] → p50 10; c holds [30, 20, 1] → p50 20
    // (had c appended to b's array in place, it would read [30, 10] and answer 10).
    expect(addSample(b, rq(100, 101), p50).closed?.rtt).toBe(10);
    expect(addSample(c, rq(100, 101), p50).closed?.rtt).toBe(20);
    expect(addSample(b, rq(100, 101), p50).closed?.rtt).toBe(10);
  });

  it('percentileOf is the nearest rank', () => {
    expect(percentileOf([4, 1, 3, 2], 0.5)).toBe(2);
    expect(percentileOf([4, 1, 3, 2], 0.9)).toBe(4);
    expect(percentileOf([7], 0.01)).toBe(7);
  });
});
