import type { Algorithm } from './algorithm.js';
import { fixedWindowRules } from './algorithms/fixed-window.js';
import { gcraRules } from './algorithms/gcra.js';
import { leakyBucketRules, leakyBucketShape } from './algorithms/leaky-bucket-queue.js';
import { slidingWindowCounterRules } from './algorithms/sliding-window-counter.js';
import { slidingWindowLogRules } from './algorithms/sliding-window-log.js';
import { continuousRules } from './algorithms/token-bucket.js';
import type { Decision } from './decision.js';
import { type Cell, NUMBER } from './memory-cell.js';

/**
 * The memory store's in-place step of a built-in algorithm's pure `consume`, for a key it already holds:
 * it decides as the pure step does, and writes the state the pure step would answer into the cell
 * (the number it holds, or the array it owns) instead of making a new state and a transition per
 * request. `undefined` when it cannot (a replayed time inside a log, a strict bucket's refusal):
 * the store then runs the pure step.
 */
export interface InPlace {
  step(cell: Cell, time: StepTime, cost: number, policy: string): Decision | undefined;
  /** Whether an admitted step may change the state's length (then its bytes, and the bounds). */
  readonly resizes: boolean;
}

/**
 * The time of the step, in a field the store writes before each step (one holder per store, read
 * at once by the step: no step calls out). A time since the epoch is past V8's small integers, so
 * handed as an argument to a step V8 does not inline into its caller it would be a new heap number
 * per check (16 of the 112 bytes of a token bucket check, issue 36); a field that only ever holds
 * doubles is written in place.
 */
export interface StepTime {
  now: number;
}

/** A store's `StepTime`; NaN until the first step, so that V8 makes the field a double from the start. */
export function stepTime(): StepTime {
  return { now: Number.NaN };
}

/**
 * The in-place step of a built-in algorithm: fixed window and sliding window log (the counters
 * express-rate-limit and the other peers keep in place, issue 36), the sliding window counter,
 * GCRA, the leaky bucket queue and the continuous token bucket; `undefined` for the stepped
 * token bucket. Chosen by `kind` and `params`, the contract the Redis
 * store's Lua twins rely on too. Proven equal to the pure steps, decisions and states, over random
 * traces: test/core/memory-in-place.test.ts.
 */
export function inPlaceStep(algorithm: Algorithm): InPlace | undefined {
  const p = algorithm.params;
  switch (algorithm.kind) {
    case 'fixed-window':
      return fixedWindowInPlace(p.limit!, p.window!);
    case 'sliding-window-log':
      return slidingWindowLogInPlace(p.limit!, p.window!);
    case 'sliding-window-counter':
      return slidingWindowCounterInPlace(p.limit!, p.window!, p.precision!);
    case 'gcra':
      return gcraInPlace(p.rate!, p.period!, p.burst!);
    case 'leaky-bucket-queue':
      return leakyBucketInPlace(p.rate!, p.period!, p.burst!, p.queue!, p.maxDelay!);
    case 'token-bucket':
      return p.stepped === 0
        ? continuousInPlace(p.capacity!, p.refillInterval! / p.refillAmount!, p.strict === 1)
        : undefined;
    default:
      return undefined;
  }
}

/** `[count, windowStart]`, counted in place: the window's start moves on, the count restarts. */
function fixedWindowInPlace(limit: number, window: number): InPlace {
  const { windowStart, current, evaluate } = fixedWindowRules(limit, window);
  return {
    resizes: false,
    step(cell, time, cost, policy) {
      const now = time.now;
      const state = cell.state as [number, number];
      const start = windowStart(state, now);
      const count = current(state, start);
      const decision = evaluate(count, start, now, cost, policy, true);
      if (decision.allowed) {
        state[0] = count + cost;
        state[1] = start;
      }
      return decision;
    },
  };
}

/**
 * `[time0, units0, …]`, admitted in place: the entries that have left the window are dropped from
 * the front, and this request adds to its millisecond's entry or appends one. A replayed time
 * older than the newest entry (an insert inside the log) is left to the pure step.
 */
function slidingWindowLogInPlace(limit: number, window: number): InPlace {
  const { firstLive, usedFrom, evaluate } = slidingWindowLogRules(limit, window);
  return {
    resizes: true,
    step(cell, time, cost, policy) {
      const now = time.now;
      const state = cell.state as number[];
      const length = state.length;
      if (length !== 0 && state[length - 2]! > now) return undefined;
      const first = firstLive(state, now);
      const decision = evaluate(state, first, usedFrom(state, first), now, cost, policy, true);
      if (!decision.allowed) return decision;
      if (first !== 0) {
        state.copyWithin(0, first);
        for (let i = first; i > 0; i--) state.pop();
      }
      const kept = state.length;
      if (kept !== 0 && state[kept - 2] === now) state[kept - 1]! += cost;
      else state.push(now, cost);
      return decision;
    },
  };
}

/**
 * `[index, count0, …, countN]`, counted in place while the request falls in the state's own
 * sub-window (`index`): there the pure step's aligned copy equals the state, and admitting adds
 * the cost to the newest count. A request in a later sub-window (the counts move) or an earlier
 * one (a replay) is left to the pure step.
 */
function slidingWindowCounterInPlace(limit: number, window: number, precision: number): InPlace {
  const { subWindow, evaluate } = slidingWindowCounterRules(limit, window, precision);
  return {
    resizes: false,
    step(cell, time, cost, policy) {
      const now = time.now;
      const state = cell.state as number[];
      const index = subWindow(now);
      if (state[0] !== index) return undefined;
      const decision = evaluate(state, index, now, cost, policy, true);
      if (decision.allowed) state[1] = state[1]! + cost;
      return decision;
    },
  };
}

/** The drain instant, in the cell's number. */
function leakyBucketInPlace(
  rate: number,
  period: number,
  burst: number,
  queue: number,
  maxDelay: number,
): InPlace {
  const { interval, slack, room, capacity } = leakyBucketShape(rate, period, burst, queue, maxDelay);
  const { decideAt, next } = leakyBucketRules(interval, slack, room, capacity, burst);
  return numberInPlace(decideAt, next);
}

/** The TAT, in the cell's number. */
function gcraInPlace(rate: number, period: number, burst: number): InPlace {
  const { evaluate, nextTat } = gcraRules(rate, period, burst);
  return numberInPlace(evaluate, nextTat);
}

/**
 * A one-number state in the cell's number: `decide` answers as the pure step does, and an
 * admitted request moves the number on by `next` (the pure step's new state).
 */
function numberInPlace(
  decide: (state: number, now: number, cost: number, policy: string, consuming: true) => Decision,
  next: (state: number, now: number, cost: number) => number,
): InPlace {
  return {
    resizes: false,
    step(cell, time, cost, policy) {
      const now = time.now;
      if (cell.state !== NUMBER) return undefined;
      const state = cell.number;
      const decision = decide(state, now, cost, policy, true);
      if (decision.allowed) cell.number = next(state, now, cost);
      return decision;
    },
  };
}

/** The empty instant, in the cell's number. A strict bucket's refusal restarts it: the pure step. */
function continuousInPlace(capacity: number, msPerToken: number, strict: boolean): InPlace {
  const { admit, next, peek } = continuousRules(capacity, msPerToken);
  return {
    resizes: false,
    step(cell, time, cost, policy) {
      const now = time.now;
      if (cell.state !== NUMBER) return undefined;
      const state = cell.number;
      const decision = admit(state, now, cost, policy);
      if (decision !== undefined) {
        cell.number = next(state, now, cost);
        return decision;
      }
      return strict ? undefined : peek(state, now, cost, policy);
    },
  };
}
