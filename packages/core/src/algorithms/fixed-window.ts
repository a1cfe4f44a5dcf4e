import { type Algorithm, EPSILON, fingerprint } from '../algorithm.js';
import type { AlgorithmParam } from '../algorithm-kinds.js';
import { admitted, ceilMs, costExceedsLimit, decide, retryMs } from '../decision.js';
import type { Duration } from '../duration.js';
import { assertKnownOptions } from '../validate.js';
import { limitWindow } from './limit-window.js';

export interface FixedWindowOptions {
  /** Requests admitted per window. Integer ≥ 1. */
  limit: number;
  /** Window length, aligned to the Unix epoch: ms or `'1m'`, `'1h'`… */
  window: Duration;
}

const KNOWN = ['limit', 'window'] as const satisfies readonly (keyof FixedWindowOptions)[];

/** `[count, windowStart]`. */
export type FixedWindowState = readonly [count: number, windowStart: number];

/**
 * Fixed window counter: at most `limit` per epoch-aligned window. Cheapest of all; a caller can get
 * up to 2 × limit through around a window boundary (see the chooser in the README).
 * @example fixedWindow({ limit: 100, window: '1m' })
 */
export function fixedWindow(options: FixedWindowOptions): Algorithm<FixedWindowState> {
  assertKnownOptions('fixedWindow', options, KNOWN);
  const { limit, window } = limitWindow(options);
  const params = { limit, window } satisfies Record<AlgorithmParam<'fixed-window'>, number>;

  const { windowStart, current, evaluate } = fixedWindowRules(limit, window);

  return {
    kind: 'fixed-window',
    params,
    fingerprint: fingerprint('fixed-window', params),
    limit,
    window,
    consume(state, now, cost, policy) {
      const start = windowStart(state, now);
      const count = current(state, start);
      const decision = evaluate(count, start, now, cost, policy, true);
      return { state: decision.allowed ? [count + cost, start] : state, decision };
    },
    peek(state, now, cost, policy) {
      const start = windowStart(state, now);
      return evaluate(current(state, start), start, now, cost, policy, false);
    },
    ttl: (state, now) => state[1] + window - now,
    // Only into the window the units were counted in; once it has passed there is nothing to undo.
    refund: (state, now, cost) => {
      if (state[1] !== Math.floor((now + EPSILON) / window) * window) return state;
      const count = state[0] - cost;
      return count <= 0 ? undefined : [count, state[1]];
    },
  };
}

/**
 * The fixed window's arithmetic for one `limit` and `window`: the pure steps above and the memory
 * store's in-place step (`memory-in-place.ts`, which counts in the array it owns instead of making a
 * new state per request) are both built from it, so they cannot drift apart.
 */
export function fixedWindowRules(limit: number, window: number) {
  // Time is read EPSILON ms late, as in every algorithm (so `ceilMs` can round a wait down by as
  // much): a window boundary EPSILON away is already crossed.
  // Replayed (client-supplied) times may go backwards: a late request counts in the newest window
  // stored, so it can never reset a newer window's count.
  const windowStart = (state: FixedWindowState | undefined, now: number): number => {
    const start = Math.floor((now + EPSILON) / window) * window;
    return state !== undefined && state[1] > start ? state[1] : start;
  };
  const current = (state: FixedWindowState | undefined, start: number): number =>
    state !== undefined && state[1] === start ? state[0] : 0;
  const evaluate = (
    count: number,
    start: number,
    now: number,
    cost: number,
    policy: string,
    consuming: boolean,
  ) => {
    const resetAfter = ceilMs(start + window - now);
    if (cost > limit)
      return costExceedsLimit(limit, Math.max(0, limit - count), count > 0 ? resetAfter : 0, policy);
    if (count + cost <= limit)
      return admitted(
        limit,
        limit - count - (consuming ? cost : 0),
        count > 0 || consuming ? resetAfter : 0,
        policy,
      );
    return decide(
      false,
      limit,
      Math.max(0, limit - count),
      resetAfter,
      retryMs(start + window - now),
      0,
      policy,
      'rate-limited',
    );
  };

  return { windowStart, current, evaluate };
}
