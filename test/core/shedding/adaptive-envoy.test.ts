import { describe, expect, it } from 'vitest';
import {
  type EnvoyGradientState,
  envoyGradient,
  envoyGradientLimit,
  envoyGradientParams,
  envoyGradientStart,
  envoyGradientUpdate,
} from '../../../packages/core/src/adaptive/envoy-gradient.js';

/** A finished request admitted at `start`, ending at `end`. */
const rq = (start: number, end: number, dropped = false) => ({ start, end, inFlight: 3, dropped });

function feed(
  state: EnvoyGradientState,
  samples: ReturnType<typeof rq>[],
  params: ReturnType<typeof envoyGradientParams>,
  draw = 0.5,
) {
  let s = state;
  for (const sample of samples) s = envoyGradientUpdate(s, sample, params, draw);
  return s;
}

describe("Envoy's adaptive concurrency gradient controller", () => {
  const params = envoyGradientParams({ initialLimit: 10, minRttRequests: 4, minRttInterval: 1000 });

  it('calculateNewLimit: gradient = (minRTT × 1.25) / sampleRTT in [0.5, 2], new = ⌊limit·g + √(limit·g)⌋', () => {
    // g = 15/17 = 0.882; 10 × 0.882 = 8.82; 8.82 + 2.97 = 11.79 → 11
    expect(envoyGradientLimit(10, 12, 17, params)).toBe(11);
    // g = 15/30 = 0.5; 5 + 2.24 = 7.24 → 7
    expect(envoyGradientLimit(10, 12, 30, params)).toBe(7);
    // g = 15/100 = 0.15 → 0.5 (floor): same 7
    expect(envoyGradientLimit(10, 12, 100, params)).toBe(7);
    // g = 15/5 = 3 → 2 (ceiling): 20 + 4.47 = 24.47 → 24
    expect(envoyGradientLimit(10, 12, 5, params)).toBe(24);
    // never below minLimit (3) nor above maxLimit
    expect(envoyGradientLimit(1, 12, 100, params)).toBe(3);
    expect(envoyGradientLimit(900, 12, 5, params)).toBe(1000);
  });

  it('measures the minRTT first with the limit pinned to 3, then restores the initial limit and follows each 100 ms window', () => {
    const start = envoyGradientStart(params, 0);
    expect(start).toMatchObject({ limit: 3, restore: 10, epoch: 0 });
    // Four RTTs 10, 12, 14, 16 → p50 (nearest rank: the 2nd of 4) = 12.
    const measured = feed(start, [rq(0, 10), rq(0, 12), rq(0, 14), rq(0, 16, true), rq(0, 16)], params);
    // The drop was not sampled: the fourth RTT is the 16 that followed it.
    expect(measured).toMatchObject({ limit: 10, restore: undefined, minRtt: 12 });
    // Next measurement: 16 + 1000 + ⌊0.5 × ⌈1000 × 0.15⌉⌋ = 16 + 1000 + 75
    expect(measured.nextMeasure).toBe(1091);
    // Window (16, 116]: RTTs 15, 20, and 17 (ending at 117, it closes the window): p50 of [15, 17, 20] = 17
    // → ⌊10 × 15/17 + √(10 × 15/17)⌋ = 11
    const first = feed(measured, [rq(20, 35), rq(30, 50), rq(100, 117)], params);
    expect(first.limit).toBe(11);
    // Window (117, 217]: 30 and 30 → g = 0.5: ⌊5.5 + 2.35⌋ = 7
    const second = feed(first, [rq(150, 180), rq(200, 230)], params);
    expect(second.limit).toBe(7);
    // At 1091 the minRTT is measured again: pinned to 3, 7 to restore after; a request admitted
    // before the measurement started is not sampled.
    const again = feed(second, [rq(1080, 1095)], params);
    expect(again).toMatchObject({ limit: 3, restore: 7, epoch: 1095 });
    expect(feed(again, [rq(1090, 1100)], params).minRttSamples).toEqual([]);
    const remeasured = feed(again, [rq(1095, 1115), rq(1096, 1116), rq(1097, 1117), rq(1098, 1118)], params);
    expect(remeasured).toMatchObject({ limit: 7, minRtt: 20 });
  });

  it('five windows in a row at the minimum start a new minRTT measurement (the minRTT is likely wrong)', () => {
    const p = envoyGradientParams({ initialLimit: 3, minRttRequests: 1, minRttInterval: 60_000 });
    let s = feed(envoyGradientStart(p, 0), [rq(0, 10)], p); // minRTT 10, limit 3
    // Each window: RTT 100 → g = 0.5 → ⌊1.5 + 1.22⌋ = 2 → 3 (minLimit). 3 → 3, five times.
    for (let i = 0; i < 4; i++) {
      s = feed(s, [rq(100 + 200 * i, 200 + 200 * i)], p);
      expect(s.restore).toBeUndefined();
    }
    s = feed(s, [rq(900, 1000)], p);
    expect(s).toMatchObject({ limit: 3, restore: 3, epoch: 1000 });
  });

  it('windows last updateInterval as given, and without it 5 minRTTs (at least 100 ms)', () => {
    const auto = envoyGradientParams({ minRttRequests: 1 });
    // minRTT 40 → windows of 200 ms, opened at the measurement's end (40): the first closes after 240.
    const a = feed(envoyGradientStart(auto, 0), [rq(0, 40)], auto);
    expect(a.window.end).toBe(240);
    // minRTT 12 → 60 ms, below the floor: 100 ms.
    expect(feed(envoyGradientStart(auto, 0), [rq(0, 12)], auto).window.end).toBe(112);
    const given = envoyGradientParams({ minRttRequests: 1, updateInterval: 100 });
    expect(feed(envoyGradientStart(given, 0), [rq(0, 40)], given).window.end).toBe(140);
  });

  // Issue 33's bench: after the downstream halved (each call twice as long), Envoy's gradient held
  // limit 4 with a minRTT from before (g = 1.25 × 50/100 = 0.625; L = g·L + √(g·L) at L ≈ 4.4)
  // until the next scheduled measurement, a minute away.
  it('regression, stale minRTT: five windows in a row lowering the limit at an RTT that does not fall measure the minRTT again', () => {
    const p = envoyGradientParams({ initialLimit: 20, minRttRequests: 1, minRttInterval: 60_000 });
    let s = feed(envoyGradientStart(p, 0), [rq(0, 50)], p); // minRTT 50: windows of 250 ms, the first ends at 300
    expect(s).toMatchObject({ limit: 20, minRtt: 50 });
    // Every window one request of 100 ms, closing it: g = 62.5/100 = 0.625.
    // 20 → ⌊12.5 + 3.54⌋ = 16 (no RTT before: not counted) → ⌊10 + 3.16⌋ = 13 → ⌊8.13 + 2.85⌋ = 10
    // → ⌊6.25 + 2.5⌋ = 8 → ⌊5 + 2.24⌋ = 7, the RTT flat at 100 each time: 4 in a row.
    const limits: number[] = [];
    for (let i = 0; i < 5; i++) {
      s = feed(s, [rq(201 + 251 * i, 301 + 251 * i)], p);
      limits.push(s.limit);
    }
    expect(limits).toEqual([16, 13, 10, 8, 7]);
    expect(s).toMatchObject({ stale: 4, restore: undefined });
    // The fifth: 7 → ⌊4.38 + 2.09⌋ = 6 → measure now, 6 restored after.
    s = feed(s, [rq(1456, 1556)], p);
    expect(s).toMatchObject({ limit: 3, restore: 6, epoch: 1556 });
    s = feed(s, [rq(1556, 1656)], p);
    expect(s).toMatchObject({ limit: 6, minRtt: 100, restore: undefined });
    // A queue that drains as the limit falls (RTT 100 then 90) resets the count.
    let q = feed(envoyGradientStart(p, 0), [rq(0, 50), rq(201, 301)], p);
    expect(q).toMatchObject({ limit: 16, stale: 0 });
    // g = 62.5/90 = 0.694: ⌊11.1 + 3.33⌋ = 14, the RTT fell: not counted.
    q = feed(q, [rq(462, 552)], p);
    expect(q).toMatchObject({ limit: 14, stale: 0 });
  });

  it('as a controller: the no-load RTT is the minRTT', () => {
    const c = envoyGradient({ minRttRequests: 1 });
    let s = c.start(0, 0);
    expect(c.limit(s)).toBe(3);
    expect(c.rttNoLoad(s)).toBeUndefined();
    s = c.update(s, rq(0, 8), 0);
    expect(c.rttNoLoad(s)).toBe(8);
  });
});
