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
/** A finished request admitted at `start` with `inFlight` in flight (itself included), ending at `end`. */
const busy = (start: number, end: number, inFlight: number) => ({ start, end, inFlight, dropped: false });

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
    // (five in flight: half the limit, so it may grow; see the idle rule below)
    const first = feed(measured, [busy(20, 35, 5), busy(30, 50, 5), busy(100, 117, 5)], params);
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

  it('not Envoy’s: a window that never had half the limit in flight does not raise it; one that did, does', () => {
    const measured = feed(
      envoyGradientStart(params, 0),
      [rq(0, 12), rq(0, 12), rq(0, 12), rq(0, 12)],
      params,
    );
    expect(measured).toMatchObject({ limit: 10, minRtt: 12 });
    // Window (12, 112]: RTTs at the minRTT, g = 15/12 → 1.25: Envoy's formula says ⌊12.5 + 3.54⌋ = 16.
    expect(envoyGradientLimit(10, 12, 12, params)).toBe(16);
    // At most 4 in flight (under half of 10): the limit holds, window after window.
    const idle = feed(measured, [busy(20, 32, 4), busy(40, 52, 4), busy(101, 113, 4)], params);
    expect(idle.limit).toBe(10);
    const stillIdle = feed(idle, [busy(150, 162, 2), busy(201, 213, 2), busy(210, 222, 1)], params);
    expect(stillIdle.limit).toBe(10);
    // Five in flight at once (half of 10): it grows as Envoy's formula says.
    const used = feed(measured, [busy(20, 32, 4), busy(40, 52, 5), busy(101, 113, 4)], params);
    expect(used.limit).toBe(16);
    // Falling is never held: an RTT of 30 halves it whatever was in flight (⌊5 + 2.24⌋ = 7).
    const slow = feed(measured, [busy(20, 50, 1), busy(40, 70, 1), busy(90, 120, 1)], params);
    expect(slow.limit).toBe(7);
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
    // → ⌊6.25 + 2.5⌋ = 8 → ⌊5 + 2.24⌋ = 7, the RTT flat at 100 each time: 4 in a row. Each request
    // was admitted with the limit in force full (it binds).
    const limits: number[] = [];
    for (let i = 0; i < 5; i++) {
      s = feed(s, [busy(201 + 251 * i, 301 + 251 * i, s.limit)], p);
      limits.push(s.limit);
    }
    expect(limits).toEqual([16, 13, 10, 8, 7]);
    expect(s).toMatchObject({ stale: 4, restore: undefined });
    // The fifth: 7 → ⌊4.38 + 2.09⌋ = 6 → measure now, 6 restored after.
    s = feed(s, [busy(1456, 1556, 7)], p);
    expect(s).toMatchObject({ limit: 3, restore: 6, epoch: 1556 });
    s = feed(s, [rq(1556, 1656)], p);
    expect(s).toMatchObject({ limit: 6, minRtt: 100, restore: undefined });
    // A queue that drains as the limit falls (RTT 100 then 85, more than the 10% a window's p50
    // wobbles by) resets the count.
    let q = feed(envoyGradientStart(p, 0), [rq(0, 50), busy(201, 301, 20)], p);
    expect(q).toMatchObject({ limit: 16, stale: 0 });
    // g = 62.5/85 = 0.735: ⌊11.76 + 3.43⌋ = 15, the RTT fell: not counted.
    q = feed(q, [busy(467, 552, 16)], p);
    expect(q).toMatchObject({ limit: 15, stale: 0 });
  });

  // Issue 33's bench, after the stale-minRTT rule: on Fastify and Express the limit still settled at
  // 4 after the halving. A real window's p50 wobbles by a few ms (98, 101, 97…); the rule asked each
  // window's RTT to be at least the one before, so a run of five almost never happened, and at the
  // fixed point (L ≈ 4.4) the limit no longer falls: the minRTT stayed stale until the next
  // scheduled measurement (60 s).
  it('regression, stale minRTT under noise: RTTs that wobble within 10% while the limit falls five times measure the minRTT again', () => {
    const p = envoyGradientParams({ initialLimit: 20, minRttRequests: 1, minRttInterval: 60_000 });
    let s = feed(envoyGradientStart(p, 0), [rq(0, 50)], p); // minRTT 50: windows of 250 ms, the first ends at 300
    // One request a window, closing it (each window opens at the sample that closed the last):
    // rtt 100: g = 62.5/100   = 0.625:  20 × g = 12.5;  + √12.5 = 3.54 → 16 (no RTT before: not counted)
    // rtt  98: g = 62.5/98    = 0.6378: 16 × g = 10.20; + 3.19 → 13 (98 ≥ 0.9 × 100: 1)
    // rtt 101: g = 0.6188: 13 × g = 8.04;  + 2.84 → 10 (2)
    // rtt  97: g = 0.6443: 10 × g = 6.44;  + 2.54 →  8 (3)
    // rtt  99: g = 0.6313:  8 × g = 5.05;  + 2.25 →  7 (4)
    const windows: [number, number][] = [
      [201, 301],
      [454, 552],
      [702, 803],
      [957, 1054],
      [1206, 1305],
    ];
    const limits: number[] = [];
    for (const [start, end] of windows) {
      s = feed(s, [busy(start, end, s.limit)], p);
      limits.push(s.limit);
    }
    expect(limits).toEqual([16, 13, 10, 8, 7]);
    expect(s.restore).toBeUndefined();
    // rtt 98: 7 × 0.6378 = 4.46; + 2.11 → 6, the fifth: measure now, 6 restored after.
    s = feed(s, [busy(1458, 1556, 7)], p);
    expect(s).toMatchObject({ limit: 3, restore: 6, epoch: 1556 });
    s = feed(s, [rq(1556, 1654)], p);
    expect(s).toMatchObject({ limit: 6, minRtt: 98, restore: undefined });
  });

  it('the stale-minRTT count: a window that holds the limit neither counts nor resets it; one that raises it, whose requests never reached the limit it set, or whose RTT falls over 10% below where the run began, resets it', () => {
    const p = envoyGradientParams({ initialLimit: 20, minRttRequests: 1, minRttInterval: 60_000 });
    const measured = feed(envoyGradientStart(p, 0), [rq(0, 50)], p);
    // 20 → 16 at rtt 100 (no RTT before), → 13 at rtt 100: counted (1), the run's RTT is 100.
    const run = feed(measured, [busy(201, 301, 20), busy(452, 552, 16)], p);
    expect(run).toMatchObject({ limit: 13, stale: 1 });
    // rtt 91 (≥ 90): g = 0.6868, 13 × g = 8.93 + 2.99 → 11: counted (2).
    expect(feed(run, [busy(712, 803, 13)], p)).toMatchObject({ limit: 11, stale: 2 });
    // The same, but never more than 10 in flight at once: a limit of 11 did not bind, reset.
    expect(feed(run, [busy(712, 803, 10)], p)).toMatchObject({ limit: 11, stale: 0 });
    // rtt 89 (< 90: a queue draining): g = 0.7022, 13 × g = 9.13 + 3.02 → 12: reset.
    expect(feed(run, [busy(714, 803, 13)], p)).toMatchObject({ limit: 12, stale: 0 });
    // rtt 62.5 at limit 13: g = 1, 13 + 3.6 → 16, raised: reset.
    expect(feed(run, [busy(740.5, 803, 13)], p)).toMatchObject({ limit: 16, stale: 0 });
    // A window that holds the limit (near the fixed point L ≈ 4.4 of g = 0.625), between two that lower it:
    // rtt 100: 8 → 5 + 2.24 → 7 (no RTT before), → 6 (1), → 5 (2), → 4 (3), 4 → 2.5 + 1.58 → 4 held (3);
    // rtt 110: g = 0.5682, 4 × g = 2.27 + 1.51 → 3, lowered (4).
    const q = envoyGradientParams({ initialLimit: 8, minRttRequests: 1, minRttInterval: 60_000 });
    let h = feed(envoyGradientStart(q, 0), [rq(0, 50)], q);
    const seen: [number, number][] = [];
    for (const [start, end] of [
      [201, 301],
      [452, 552],
      [703, 803],
      [954, 1054],
      [1205, 1305],
      [1446, 1556],
    ] as const) {
      h = feed(h, [busy(start, end, h.limit)], q);
      seen.push([h.limit, h.stale]);
    }
    expect(seen).toEqual([
      [7, 0],
      [6, 1],
      [5, 2],
      [4, 3],
      [4, 3],
      [3, 4],
    ]);
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
