import { AdaptiveConcurrency } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { log10Root } from '../../../packages/core/src/adaptive/log10-root.js';
import {
  type VegasState,
  vegas,
  vegasParams,
  vegasStart,
  vegasUpdate,
} from '../../../packages/core/src/adaptive/vegas.js';
import { win } from './adaptive-helpers.js';

/** Feeds windows in order; returns the state after each. */
function run(
  state: VegasState,
  windows: Parameters<typeof vegasUpdate>[1][],
  params = vegasParams(),
  draw = 0,
) {
  const out: VegasState[] = [];
  let s = state;
  for (const w of windows) {
    s = vegasUpdate(s, w, params, draw);
    out.push(s);
  }
  return out;
}

describe('Vegas (Netflix concurrency-limits VegasLimit)', () => {
  it("log10Root is Netflix's Log10RootFunction: max(1, ⌊log10 n⌋) below 1000, ⌊√n⌋ from 1000", () => {
    expect([1, 9, 20, 99, 100, 999, 1000, 4000].map(log10Root)).toEqual([1, 1, 1, 1, 2, 2, 31, 63]);
  });

  it('follows the published formula window by window (limit 20: L = 1, alpha 3, beta 6, threshold 1)', () => {
    const params = vegasParams();
    // draw 0 → probe jitter 0.5: a probe is due at 0.5 × 30 × limit ≥ 300 windows, far off here.
    const steps = run(
      vegasStart(params, 0, 0),
      [
        win(10, 20), // 1. no no-load RTT yet: rttNoLoad = 10, limit holds at 20
        win(10, 20), // 2. queue = ⌈20 × (1 − 10/10)⌉ = 0 ≤ threshold 1 → 20 + beta 6 = 26
        win(10, 26), // 3. queue 0 again → 26 + 6 = 32
        win(12, 32), // 4. queue = ⌈32 × (1 − 10/12)⌉ = ⌈5.33⌉ = 6: not ≤ 1, not < 3, not > 6 → holds 32
        win(16, 32), // 5. queue = ⌈32 × 0.375⌉ = 12 > beta 6 → 32 − max(L, 12 − 6) = 26 (Netflix: 32 − L)
        win(10.5, 26), // 6. queue = ⌈26 × 0.5/10.5⌉ = ⌈1.24⌉ = 2 < alpha 3 → 26 + L = 27
        win(10, 13), // 7. 2 × 13 = 26 < 27: the app does not use the limit → holds 27
        win(10, 27, true), // 8. a drop → 27 − L = 26
        win(8, 26), // 9. below the no-load RTT: rttNoLoad = 8, limit holds
      ],
      params,
    );
    expect(steps.map((s) => s.estimate)).toEqual([20, 26, 32, 32, 26, 27, 27, 26, 26]);
    expect(steps.map((s) => s.rttNoLoad)).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 8]);
  });

  it('at limit 100–999 the steps double (L = 2: alpha 6, beta 12, threshold 2)', () => {
    const params = vegasParams({ initialLimit: 100 });
    const [, grown, near, within, shrunk] = run(
      vegasStart(params, 0, 0),
      [
        win(10, 100), // rttNoLoad = 10
        win(10, 100), // queue 0 ≤ 2 → 100 + 12 = 112
        win(10.5, 112), // queue = ⌈112 × 0.5/10.5⌉ = ⌈5.33⌉ = 6: not < alpha 6, not > 12 → holds
        win(11, 112), // queue = ⌈112/11⌉ = ⌈10.2⌉ = 11 ≤ beta 12 → holds
        win(12, 112), // queue = ⌈112/6⌉ = ⌈18.7⌉ = 19 > 12 → 112 − max(2, 19 − 12) = 105
      ],
      params,
    );
    expect([grown!.estimate, near!.estimate, within!.estimate, shrunk!.estimate]).toEqual([
      112, 112, 112, 105,
    ]);
  });

  it('smoothing blends the new estimate in, and maxLimit caps it before the blend', () => {
    const smooth = vegasParams({ smoothing: 0.5 });
    // queue 0 → target 26; 0.5 × 20 + 0.5 × 26 = 23
    expect(run(vegasStart(smooth, 0, 0), [win(10, 20), win(10, 20)], smooth)[1]!.estimate).toBe(23);
    const capped = vegasParams({ maxLimit: 22 });
    expect(run(vegasStart(capped, 0, 0), [win(10, 20), win(10, 20)], capped)[1]!.estimate).toBe(22);
  });

  it('re-probes the no-load RTT every probeJitter × probeMultiplier × limit windows, the jitter drawn from the caller', () => {
    const params = vegasParams({ initialLimit: 4, probeMultiplier: 1 });
    // draw 0 → jitter 0.5: due when 0.5 × 1 × 4 = 2 ≤ probeCount.
    const start = vegasStart(params, 0, 0);
    const first = vegasUpdate(start, win(10, 4), params, 0.5); // count 1 < 2: rttNoLoad = 10
    const probe = vegasUpdate(first, win(20, 4), params, 0.5); // count 2 ≥ 2: probe
    // The probe takes this window's RTT as the no-load RTT (latency rose for good), restarts the
    // count and draws a new jitter: 0.5 + 0.5 × 0.5 = 0.75. The limit holds.
    expect(probe).toMatchObject({ rttNoLoad: 20, probeCount: 0, probeJitter: 0.75, estimate: 4 });
    // Next window at 20 ms reads no queue: ⌈4 × (1 − 20/20)⌉ = 0 → 4 + 6 = 10 (without the probe,
    // queue = ⌈4 × 0.5⌉ = 2 > threshold 1, < alpha 3 → 5).
    expect(vegasUpdate(probe, win(20, 4), params, 0.5).estimate).toBe(10);
  });

  // Issue 33's bench: after the downstream halved (each call twice as long), Vegas took 13.1 s to
  // settle: it stepped down by L = 1 a 1 s window, from 26, and its no-load RTT (50 ms) stayed
  // stale, so it read the slower service as a queue of half the limit and held ~2 × beta.
  it('regression, slow settling after a slowdown: a deep queue is cut in one window; one the cut does not drain re-probes the no-load RTT', () => {
    const params = vegasParams({ initialLimit: 26 });
    const steps = run(
      vegasStart(params, 0, 0),
      [
        win(50, 26), // 1. rttNoLoad = 50, holds 26
        win(125, 26), // 2. queue = ⌈26 × (1 − 50/125)⌉ = ⌈15.6⌉ = 16 > 6 → 26 − (16 − 6) = 16
        win(100, 16), // 3. queue = ⌈16 × 0.5⌉ = 8 > 6 right after a cut: no queue drained, the
        //                  service slowed → probe: rttNoLoad = 100, the limit holds
        win(100, 16), // 4. queue 0 ≤ threshold → 16 + 6 = 22
        win(105, 22), // 5. queue = ⌈22 × 5/105⌉ = ⌈1.05⌉ = 2 < alpha → 23
      ],
      params,
      0.5,
    );
    expect(steps.map((s) => s.estimate)).toEqual([26, 16, 16, 22, 23]);
    expect(steps.map((s) => s.rttNoLoad)).toEqual([50, 50, 100, 100, 100]);
    expect(steps[2]).toMatchObject({ probeCount: 0, probeJitter: 0.75, drained: false });
    // A real queue drains after the cut: no probe, the no-load RTT stays.
    const [, cut, after] = run(vegasStart(params, 0, 0), [win(50, 26), win(125, 26), win(60, 16)], params);
    expect(cut).toMatchObject({ estimate: 16, drained: true });
    // queue = ⌈16 × (1 − 50/60)⌉ = ⌈2.67⌉ = 3: in [alpha, beta] → holds
    expect(after).toMatchObject({ estimate: 16, rttNoLoad: 50, drained: false });
  });

  it('the no-load RTT never goes below rttNoLoadFloor (Netflix #165)', () => {
    const floored = vegasParams({ rttNoLoadFloor: 5 });
    const [low, next] = run(vegasStart(floored, 0, 0), [win(1, 20), win(6, 20)], floored);
    // rttNoLoad = max(5, 1) = 5; then queue = ⌈20 × (1 − 5/6)⌉ = ⌈3.33⌉ = 4: in [alpha, beta] → holds 20
    expect(low!.rttNoLoad).toBe(5);
    expect(next!.estimate).toBe(20);
    // With the default floor (0.1 ms) the 1 ms window sets rttNoLoad = 1: queue = ⌈20 × 5/6⌉ = 17 > 6
    // → 20 − (17 − 6) = 9
    const plain = vegasParams();
    expect(run(vegasStart(plain, 0, 0), [win(1, 20), win(6, 20)], plain)[1]!.estimate).toBe(9);
  });

  it('a window of drops only (no RTT recorded) decreases the limit without touching the no-load RTT', () => {
    const params = vegasParams();
    const [seeded, dropped] = run(vegasStart(params, 0, 0), [win(10, 20), win(undefined, 20, true)], params);
    expect(dropped!.estimate).toBe(19); // 20 − L
    expect(dropped!.rttNoLoad).toBe(seeded!.rttNoLoad);
  });

  it('as a controller: samples are windowed (≥ windowSamples in a window that lasts 2 × its min RTT, within bounds)', () => {
    const c = vegas({ windowSamples: 2, minWindow: 10, maxWindow: 10 });
    let s = c.start(0, 0);
    // Window [0, 10]: two 5 ms requests; the one ending at 11 closes it: mean (5 + 5 + 5) / 3 = 5 → rttNoLoad 5.
    for (const [start, end] of [
      [0, 5],
      [1, 6],
      [6, 11],
    ] as const) {
      s = c.update(s, { start, end, inFlight: 20, dropped: false }, 0);
    }
    expect(c.rttNoLoad(s)).toBe(5);
    expect(c.limit(s)).toBe(20);
    // Window [11, 21]: RTTs 5 and 5 and, closing it, 5 → queue 0 → 26.
    for (const [start, end] of [
      [11, 16],
      [12, 17],
      [17, 22],
    ] as const) {
      s = c.update(s, { start, end, inFlight: 20, dropped: false }, 0);
    }
    expect(c.limit(s)).toBe(26);
  });

  it('regression, "Vegas never recovered": at limit 1 with a 200 ms RTT (5 requests a 1 s window) the limit rises again', () => {
    const limiter = new AdaptiveConcurrency({ controller: vegas({ initialLimit: 1 }), random: () => 0.5 });
    // One request at a time, 200 ms each. Windows need 10 samples: the first closes with the
    // 10th request (at 2000 ms; RTT 200 becomes the no-load RTT), the second with the 20th: queue
    // = ⌈1 × (1 − 200/200)⌉ = 0 ≤ threshold 1 → 1 + 6 = 7. Had the short windows been discarded
    // (Netflix's WindowedLimit), none would ever count and the limit would stay at 1.
    for (let i = 0; i < 20; i++) {
      const lease = limiter.acquire(undefined, { now: i * 200 });
      expect(lease.decision.allowed).toBe(true);
      lease.release((i + 1) * 200);
      if (i === 18) expect(limiter.limit).toBe(1);
    }
    expect(limiter.limit).toBe(7);
  });
});
