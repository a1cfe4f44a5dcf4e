import { aimd } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { CRITICAL_EVERY, PARTITIONS, SERVICE_MS, SLOTS } from '../../bench/src/adaptive/subjects.js';
import {
  BENCH_SHAPE,
  BUSY_LOOP,
  halvingShape,
  limitRecovery,
  runShape,
  shapeDeadline,
} from '../../packages/playground/src/sim/adaptive/bench-shape.js';

/**
 * Issue 33's targets on the HTTP bench's shape, in virtual time (deterministic: a seed gives one
 * run): a downstream of 20 slots × 50 ms, evenly spaced arrivals, 1 request in 7 critical,
 * partitions critical 0.8 / low 0.2.
 */
// 20 s rounds: Envoy's gradient spends its first ~2 s measuring the minRTT at concurrency 3 and
// climbing back from 3 (as Envoy does), which a shorter round weighs more than a service would.
const shape = { ...BENCH_SHAPE, duration: 20_000 };
const deadline = shapeDeadline(shape);
const fixed = runShape('fixed', 2, shape, { deadline });
const LATENCY_LED = ['vegas', 'gradient2', 'aimd'] as const;

describe('the bench shape in the simulator', () => {
  it('is the HTTP bench’s: its downstream, its mix, its partitions', () => {
    expect(BENCH_SHAPE).toMatchObject({
      slots: SLOTS,
      serviceTime: SERVICE_MS,
      criticalEvery: CRITICAL_EVERY,
      partitions: PARTITIONS,
    });
  });

  it('the mix: at 4× critical alone fits inside its guaranteed share, at 2× low alone is past the capacity', () => {
    const critical = 1 / CRITICAL_EVERY;
    expect(4 * critical).toBeLessThan(PARTITIONS.critical); // 0.57× the capacity < 80%
    expect(2 * (1 - critical)).toBeGreaterThan(1); // 1.71×: the limiters have shedding to do at 2×
  });

  it('the deadline is 2 × the no-load p99 (50 ms calls: 100 ms); the fixed limit of 20 uses the downstream', () => {
    expect(deadline).toBe(100);
    expect(fixed.goodput).toBeGreaterThan(380);
    expect(fixed.goodputInDeadline).toBe(fixed.goodput);
  });

  it('goodput within the deadline tells a limit 4× too high from the right one', () => {
    const loose = runShape('fixed-4x', 2, shape, { deadline });
    expect(loose.goodput).toBeGreaterThan(380); // every answer, late ones included
    expect(loose.goodputInDeadline).toBeLessThan(0.05 * loose.goodput); // ~200 ms each: all late
  });

  // Regression (issue 33's bench at 2×: 73–82% of the best fixed limit): the partitions kept the
  // whole unused part of critical's share free while critical had demand.
  it.each([...LATENCY_LED, 'envoy-gradient' as const])(
    '%s at 2×: goodput in the deadline ≥ 90% of the fixed limit’s, never over the limit',
    (kind) => {
      const round = runShape(kind, 2, shape, { deadline });
      expect(round.overLimit).toBe(0);
      expect(round.goodputInDeadline).toBeGreaterThanOrEqual(0.9 * fixed.goodput);
      expect(round.p99).toBeLessThanOrEqual(deadline);
      if (kind !== 'envoy-gradient') expect(round.criticalServed).toBeGreaterThanOrEqual(0.99);
      // Low priority absorbs the shedding.
      expect(round.lowServed).toBeLessThan(round.criticalServed);
    },
  );

  // Issue 33's target at 4×, on a mix where critical's demand fits its share (bench/results/adaptive.md:
  // with a quarter critical, critical alone was the whole capacity at 4× and got 73–78%).
  it.each(LATENCY_LED)(
    '%s at 4×: critical ≥ 99% served, low priority absorbs the shedding, goodput in the deadline ≥ 90% of the fixed limit’s',
    (kind) => {
      const round = runShape(kind, 4, shape, { deadline });
      const fixed4 = runShape('fixed', 4, shape, { deadline });
      expect(round.overLimit).toBe(0);
      expect(round.criticalServed).toBeGreaterThanOrEqual(0.99);
      expect(round.lowServed).toBeLessThan(0.2);
      expect(round.goodputInDeadline).toBeGreaterThanOrEqual(0.9 * fixed4.goodput);
    },
  );

  // Issue 33's bench, Express at 4×: critical 98.8–98.9% served with every latency-led controller
  // (Fastify: 99.3–99.5%), low priority and goodput lower too. The Express app's one core is busy
  // there: its loop turns in bursts, so requests arrive in bursts and meet slots whose responses
  // have not yet ended. Modelled here (2 ms turns, a 10–30 ms stall one turn in 50), one slot of
  // headroom over critical's recent peak served 98.6–99.0%: bursts past the peak met a limit low
  // priority had filled. ⌈√peak⌉ slots of headroom cover them.
  const busy = { ...shape, loop: BUSY_LOOP };
  it.each(LATENCY_LED.flatMap((kind) => [2, 4].map((load) => [kind, load] as const)))(
    '%s at %s× on a busy event loop: critical ≥ 99% served, low priority absorbs the shedding, goodput in the deadline ≥ 90% of the fixed limit’s there',
    (kind, load) => {
      const round = runShape(kind, load, busy, { deadline });
      const fixedBusy = runShape('fixed', load, busy, { deadline });
      expect(round.overLimit).toBe(0);
      expect(round.criticalServed).toBeGreaterThanOrEqual(0.99);
      expect(round.lowServed).toBeLessThan(load === 4 ? 0.2 : 0.5);
      expect(round.goodputInDeadline).toBeGreaterThanOrEqual(0.9 * fixedBusy.goodput);
    },
  );

  it('the busy loop: arrivals and the ends of responses are seen at the turns’ ends, later than without one', () => {
    const none = { deadline: Number.POSITIVE_INFINITY };
    // Without a loop a 50 ms call at 10% load is answered in 50 ms; on the busy loop a turn (2 ms)
    // or a stall later, never sooner.
    expect(runShape('fixed', 0.1, shape, none).p99).toBe(50);
    const slow = runShape('fixed', 0.1, busy, none);
    expect(slow.p99).toBeGreaterThan(52);
    expect(slow.p99).toBeLessThan(50 + 2 * 1.5 * busy.loop.stall);
  });

  // Issue 33's bench: AIMD's p99 on Express at 4× was 112 ms (target ≤ ~104). Netflix's AIMDLimit
  // sees latency only through its timeout (5 s): until a request takes that long it grows by 1 a
  // window, and the queue with it, so its p99 depends on how long it has run. The lever is the
  // documented timeout, not a default changed in silence.
  it('aimd grows without a drop: p99 over twice the no-load one after 40 s at 2× with the defaults, held at the deadline by timeout', () => {
    const long = { ...shape, duration: 40_000 };
    const defaults = runShape('aimd', 2, long, { deadline });
    expect(defaults.p99).toBeGreaterThan(1.3 * deadline); // 141 ms
    expect(defaults.limits.at(-1)).toBeGreaterThan(defaults.limits[100]!); // still growing at 40 s
    const bounded = runShape('aimd', 2, long, { deadline, controller: () => aimd({ timeout: deadline }) });
    expect(bounded.p99).toBeLessThanOrEqual(1.05 * deadline); // 101 ms
    expect(bounded.goodputInDeadline).toBeGreaterThanOrEqual(0.95 * fixed.goodput);
    expect(bounded.criticalServed).toBeGreaterThanOrEqual(0.99);
  });

  it.each(LATENCY_LED)(
    '%s settles within 10 s after the downstream halves, swinging less than ±20% there, at a limit that keeps its 20 slots busy',
    (kind) => {
      // Regression: Vegas took 13.1 s and settled at 16 (12 once the partitions were fixed): it
      // held the no-load RTT from before the halving (each call now takes 100 ms, but the
      // downstream still serves 20 at once).
      const s = halvingShape(kind, BENCH_SHAPE);
      expect(s.after).toBeLessThanOrEqual(10);
      expect(s.swing).toBeLessThan(0.2);
      expect(s.steadyAt).toBeGreaterThanOrEqual(BENCH_SHAPE.slots);
    },
  );

  // Regression (issue 33's bench, Fastify and Express: Envoy's gradient settled at 4 after the
  // halving). Its minRTT from before the halving (50 ms) reads the slower calls as a queue: g = 0.625
  // and the limit falls to L = g·L + √(g·L) ≈ 4. The not-Envoy re-measurement asked each window's
  // RTT to be at least the last's, which a noisy p50 rarely gives five times in a row; with service
  // times a little spread (σ 0.05), it never fired and the limit stayed at 3–4 to the end (20 s).
  // Envoy's own oscillation (the √L headroom, windows whose RTTs are those of requests admitted one
  // or two windows before) swings it ±12–38% around ~33 before and after the halving alike, so the
  // ±20% reading is no verdict on its recovery: what is checked is that it comes back to the
  // downstream's 20 slots within 5 s and stays there.
  it.each([0, 0.05, 0.1, 0.2])(
    'envoy-gradient (service times σ %s) measures its minRTT again after the downstream halves, and from 5 s after keeps the 20 slots busy',
    (sigma) => {
      const s = halvingShape('envoy-gradient', { ...BENCH_SHAPE, sigma });
      const after = s.limits.slice(s.limits.length / 2);
      expect(Math.min(...after.slice(0, 50))).toBe(3); // the measurement, pinned to 3
      expect(Math.min(...after.slice(50))).toBeGreaterThanOrEqual(BENCH_SHAPE.slots);
      expect(s.steadyAt).toBeGreaterThanOrEqual(BENCH_SHAPE.slots);
    },
  );

  it('the settling reading: the last 100 ms sample outside ±20% of the last third’s median', () => {
    // 5 samples before the halving; after it 30 → 20 → 10 × 6 (median 10): the last outside is the
    // second sample after the halving, so it settles 0.2 s after it.
    const s = limitRecovery([30, 30, 30, 30, 30, 30, 20, 10, 10, 10, 10, 10, 10], 5);
    expect(s).toEqual({ after: 0.2, steadyAt: 10, swing: 0 });
  });
});
