import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ControllerParams,
  type ControllerState,
  controlStep,
  dropProbabilities,
  restingState,
  shedLevel,
} from '../../../packages/core/src/shedding/utilization-controller.js';

/** The defaults of UtilizationShedder with three priorities (two sheddable), sampled every second. */
const PARAMS: ControllerParams = {
  good: 0.7,
  bad: 0.8,
  delay: 28_000,
  ramp: 120_000,
  recovery: 120_000,
  maxStep: 28_000,
  sheddable: 2,
};

/** Drives the controller with `signal` once a second for `seconds`, from `state`. */
function run(state: ControllerState, signal: number, seconds: number, params = PARAMS): ControllerState {
  let s = state;
  for (let i = 1; i <= seconds; i++) s = controlStep(s, signal, s.at + 1000, params);
  return s;
}

/** [critical, normal, low] drop probabilities. */
const drops = (state: ControllerState, params = PARAMS) => dropProbabilities(state, params);

describe('utilization controller: the control law', () => {
  it('sheds nothing before overload has lasted the delay', () => {
    const rest = restingState(PARAMS, 0);
    expect(drops(run(rest, 1, 27))).toEqual([0, 0, 0]);
    const atDelay = run(rest, 1, 28);
    expect(atDelay.pressure).toBe(0);
    expect(drops(atDelay)).toEqual([0, 0, 0]);
    expect(drops(run(rest, 1, 29))[2]).toBeGreaterThan(0);
  });

  it('then ramps linearly over the ramp: the least important priority first, then the next; critical never', () => {
    const rest = restingState(PARAMS, 0);
    const at = (seconds: number) => drops(run(rest, 0.95, seconds));
    expect(at(28 + 15)).toEqual([0, 0, 0.25]);
    expect(at(28 + 30)).toEqual([0, 0, 0.5]);
    expect(at(28 + 45)).toEqual([0, 0, 0.75]);
    expect(at(28 + 60)).toEqual([0, 0, 1]);
    expect(at(28 + 90)).toEqual([0, 0.5, 1]);
    expect(at(28 + 120)).toEqual([0, 1, 1]);
    expect(at(28 + 600)).toEqual([0, 1, 1]);
  });

  it('signal exactly at bad builds pressure; exactly at good is inside the dead zone', () => {
    const rest = restingState(PARAMS, 0);
    expect(run(rest, 0.8, 10).pressure).toBe(-18_000);
    expect(run(rest, 0.7, 10).pressure).toBe(-28_000);
  });

  it('holds inside the dead zone, wherever it is', () => {
    const shedding = run(restingState(PARAMS, 0), 1, 28 + 45);
    expect(drops(shedding)).toEqual([0, 0, 0.75]);
    const held = run(shedding, 0.75, 300);
    expect(held.pressure).toBe(shedding.pressure);
    expect(drops(held)).toEqual([0, 0, 0.75]);
    // A signal that is no number carries no information: it holds too.
    expect(run(shedding, Number.NaN, 10).pressure).toBe(shedding.pressure);
  });

  it('recovers gradually at the same rate once utilization is good, and re-arms the delay', () => {
    const full = run(restingState(PARAMS, 0), 1, 28 + 120);
    expect(drops(full)).toEqual([0, 1, 1]);
    expect(drops(run(full, 0.3, 30))).toEqual([0, 0.5, 1]);
    expect(drops(run(full, 0.3, 60))).toEqual([0, 0, 1]);
    expect(drops(run(full, 0.3, 90))).toEqual([0, 0, 0.5]);
    expect(drops(run(full, 0.3, 120))).toEqual([0, 0, 0]);
    // It keeps draining to rest: a new overload must again last the whole delay.
    const rested = run(full, 0.3, 120 + 28);
    expect(rested.pressure).toBe(-28_000);
    expect(drops(run(rested, 1, 28))).toEqual([0, 0, 0]);
    // A brief good spell only partly re-arms it: 10 s past zero needs only 10 s of overload back.
    const partly = run(full, 0.3, 130);
    expect(drops(run(partly, 1, 10))).toEqual([0, 0, 0]);
    expect(drops(run(partly, 1, 10 + 12))).toEqual([0, 0, 0.2]);
  });

  it('a configured recovery sets the rate down', () => {
    const fast = { ...PARAMS, recovery: 60_000 };
    const full = run(restingState(fast, 0), 1, 28 + 120, fast);
    expect(drops(run(full, 0, 30, fast), fast)).toEqual([0, 0, 1]);
    expect(drops(run(full, 0, 60, fast), fast)).toEqual([0, 0, 0]);
  });

  it('a stalled sampler credits at most maxStep: one late sample from rest cannot start shedding', () => {
    const rest = restingState(PARAMS, 0);
    const late = controlStep(rest, 1, 300_000, PARAMS);
    expect(late.pressure).toBe(0);
    expect(drops(late)).toEqual([0, 0, 0]);
    // A clock that goes backwards credits nothing.
    const back = controlStep({ pressure: 5000, at: 10_000 }, 1, 9000, PARAMS);
    expect(back).toEqual({ pressure: 5000, at: 10_000 });
  });

  it('with a zero delay, shedding starts with the first overloaded step', () => {
    const eager = { ...PARAMS, delay: 0, maxStep: 1000 };
    expect(drops(run(restingState(eager, 0), 1, 6, eager), eager)).toEqual([0, 0, 0.1]);
  });

  it('a single sheddable priority ramps over the whole ramp', () => {
    const two = { ...PARAMS, sheddable: 1 };
    expect(drops(run(restingState(two, 0), 1, 28 + 60, two), two)).toEqual([0, 0.5]);
  });

  it('property: the shed level never moves by more than the ramp allows per step, and stays in [0, P]', () => {
    const paramsArb = fc.record({
      good: fc.double({ min: 0.1, max: 0.8, noNaN: true }),
      spread: fc.double({ min: 0, max: 0.2, noNaN: true }),
      delay: fc.integer({ min: 0, max: 60_000 }),
      ramp: fc.integer({ min: 1000, max: 300_000 }),
      recovery: fc.integer({ min: 1000, max: 300_000 }),
      maxStep: fc.integer({ min: 500, max: 60_000 }),
      sheddable: fc.integer({ min: 1, max: 5 }),
    });
    const stepArb = fc.record({
      dt: fc.integer({ min: -5000, max: 120_000 }),
      signal: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constant(Number.NaN)),
    });
    fc.assert(
      fc.property(paramsArb, fc.array(stepArb, { maxLength: 100 }), (p, steps) => {
        const params: ControllerParams = {
          good: p.good,
          bad: Math.min(1, p.good + p.spread),
          delay: p.delay,
          ramp: p.ramp,
          recovery: p.recovery,
          maxStep: p.maxStep,
          sheddable: p.sheddable,
        };
        let state = restingState(params, 0);
        let now = 0;
        for (const { dt, signal } of steps) {
          now += dt;
          const before = shedLevel(state, params);
          const credited = Math.min(Math.max(now - state.at, 0), params.maxStep);
          const next = controlStep(state, signal, now, params);
          const after = shedLevel(next, params);
          const allowed =
            (params.sheddable * credited * Math.max(1, params.ramp / params.recovery)) / params.ramp;
          expect(Math.abs(after - before)).toBeLessThanOrEqual(allowed + 1e-9);
          expect(after).toBeGreaterThanOrEqual(0);
          expect(after).toBeLessThanOrEqual(params.sheddable);
          expect(next.pressure).toBeGreaterThanOrEqual(-params.delay);
          // Rising only under bad utilization, falling only under good.
          if (after > before) expect(signal).toBeGreaterThanOrEqual(params.bad);
          if (after < before) expect(signal).toBeLessThan(params.good);
          // Each priority's drop probability moves by no more than the level does, and critical stays 0.
          const d0 = dropProbabilities(state, params);
          const d1 = dropProbabilities(next, params);
          expect(d1[0]).toBe(0);
          for (let i = 0; i < d0.length; i++)
            expect(Math.abs(d1[i]! - d0[i]!)).toBeLessThanOrEqual(allowed + 1e-9);
          // Lowest priority first: a more important priority is never dropped more than a less important one.
          for (let i = 1; i + 1 < d1.length; i++) expect(d1[i]!).toBeLessThanOrEqual(d1[i + 1]!);
          state = next;
        }
      }),
      { numRuns: 300 },
    );
  });
});
