import { type Algorithm, EPSILON, fingerprint } from '../algorithm.js';
import type { AlgorithmParam } from '../algorithm-kinds.js';
import { admitted, ceilMs, costExceedsLimit, decide, retryMs } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { assertUnit } from '../time-range.js';
import { assertKnownOptions, integerOption, requireOption } from '../validate.js';

export interface SlidingWindowCounterOptions {
  /** Requests admitted per sliding window (estimated). Integer ≥ 1. */
  limit: number;
  /** Window length: ms or `'1m'`, `'1h'`… */
  window: Duration;
  /**
   * Sub-windows the window is split into. 1 is Cloudflare's two-window estimate (the previous
   * window weighted by how much of it still overlaps); Figma counted in 60 sub-windows. Only the
   * oldest sub-window is estimated, so the estimate is off by at most that sub-window's count.
   * Integer 1–1000.
   * @default 1
   */
  precision?: number;
}

const KNOWN = [
  'limit',
  'window',
  'precision',
] as const satisfies readonly (keyof SlidingWindowCounterOptions)[];

/**
 * `[subWindowIndex, count0, count1, …, countN]`: the current sub-window's index (floor(now / size))
 * and the counts of the current sub-window and the N before it, newest first.
 */
export type SlidingWindowCounterState = readonly number[];

/**
 * Sliding window counter: O(precision) memory per key, a weighted estimate of the sliding count.
 * @example slidingWindowCounter({ limit: 100, window: '1m' })
 * @example slidingWindowCounter({ limit: 1000, window: '1h', precision: 60 })
 */
export function slidingWindowCounter(
  options: SlidingWindowCounterOptions,
): Algorithm<SlidingWindowCounterState> {
  assertKnownOptions('slidingWindowCounter', options, KNOWN);
  const limit = integerOption('limit', requireOption('limit', options.limit));
  const window = parseDuration('window', requireOption('window', options.window));
  const precision = integerOption('precision', options.precision ?? 1, 1, 1000);
  const params = { limit, window, precision } satisfies Record<
    AlgorithmParam<'sliding-window-counter'>,
    number
  >;
  const size = window / precision;
  const option = options.precision === undefined ? 'window' : 'precision';
  assertUnit(
    option,
    option === 'window' ? options.window : options.precision,
    size,
    'window / precision (the sub-window)',
  );

  const { align, subWindow, evaluate } = slidingWindowCounterRules(limit, window, precision);

  return {
    kind: 'sliding-window-counter',
    params,
    fingerprint: fingerprint('sliding-window-counter', params),
    limit,
    window,
    consume(state, now, cost, policy) {
      const index = subWindow(now);
      const next = align(state, index);
      const decision = evaluate(next, index, now, cost, policy, true);
      if (!decision.allowed) return { state, decision };
      next[1]! += cost;
      return { state: next, decision };
    },
    peek(state, now, cost, policy) {
      const index = subWindow(now);
      return evaluate(align(state, index), index, now, cost, policy, false);
    },
    ttl(state, now) {
      const index = state[0]!;
      for (let i = 0; i <= precision; i++) {
        if (state[i + 1]! > 0) return (index - i + precision + 1) * size - now;
      }
      return 0;
    },
    // From the sub-window the units were counted in, while it is still one of the N + 1 held.
    refund(state, now, cost) {
      const offset = state[0]! - subWindow(now);
      if (offset < 0 || offset > precision || state[offset + 1]! <= 0) return state;
      const next = state.slice();
      next[offset + 1] = Math.max(0, next[offset + 1]! - cost);
      return next.some((count, i) => i > 0 && count > 0) ? next : undefined;
    },
  };
}

/**
 * The sliding window counter's arithmetic for one `limit`, `window` and `precision`: the pure
 * steps above and the memory store's in-place step (`memory-in-place.ts`, which adds to the
 * newest count of the array it holds when the request falls in its sub-window) are both built
 * from it, so they cannot drift apart.
 */
export function slidingWindowCounterRules(limit: number, window: number, precision: number) {
  const size = window / precision;
  // The state for the sub-window containing `now`, before this request: `[index, count0, …,
  // countN]`, counts aligned to that sub-window, newest first (`count(i)` reads them). One array,
  // built at its final length: a consume that admits adds its cost to `count0` and stores it.
  const align = (state: SlidingWindowCounterState | undefined, index: number): number[] => {
    const next = new Array<number>(precision + 2);
    // Replayed times may go backwards: count them in the newest sub-window we have. Every slot
    // is written (a loop, not `fill`: no builtin call on every decision).
    const shift = state === undefined ? precision + 1 : Math.max(0, index - state[0]!);
    next[0] = state === undefined ? index : Math.max(index, state[0]!);
    for (let i = 0; i <= precision; i++) next[i + 1] = i < shift ? 0 : state![i - shift + 1]!;
    return next;
  };
  // Time is read EPSILON ms late, as in every algorithm (so `ceilMs` can round a wait down by as
  // much): a sub-window boundary EPSILON away is already crossed, and the oldest sub-window's
  // weight is the one EPSILON later.
  const subWindow = (now: number): number => Math.floor((now + EPSILON) / size);
  const weighted = (oldest: number, elapsed: number): number =>
    oldest * Math.max(0, size - elapsed - EPSILON);
  // `aligned` is what `align` returns: the count of sub-window i (0 the newest) is `aligned[i + 1]`.
  const estimate = (aligned: readonly number[], elapsed: number): number => {
    let total = 0;
    for (let i = 1; i <= precision; i++) total += aligned[i]!;
    return total + weighted(aligned[precision + 1]!, elapsed) / size;
  };
  // Earliest offset from now at which `estimate + cost <= limit`, walking sub-window boundaries.
  const waitFor = (aligned: readonly number[], elapsed: number, cost: number): number => {
    let shifted = aligned.slice(1);
    let offset = 0;
    let at = elapsed;
    for (let step = 0; step <= precision + 1; step++) {
      let full = 0;
      for (let i = 0; i < precision; i++) full += shifted[i]!;
      const oldest = shifted[precision]!;
      const room = limit - cost - full;
      if (room >= 0) {
        if (weighted(oldest, at) <= room * size) return offset;
        return offset + size * (1 - room / oldest) - at;
      }
      offset += size - at;
      at = 0;
      shifted = [0, ...shifted.slice(0, precision)];
    }
    return offset;
  };
  // Time until every count has left the window (weight of the oldest sub-window reaches 0), with
  // `added` units more in the newest sub-window (what a consume that admits leaves).
  const resetAfter = (aligned: readonly number[], index: number, now: number, added: number): number => {
    for (let i = 0; i <= precision; i++) {
      if (aligned[i + 1]! + (i === 0 ? added : 0) > 0)
        return ceilMs((index - i + precision + 1) * size - now);
    }
    return 0;
  };
  const evaluate = (
    aligned: readonly number[],
    index: number,
    now: number,
    cost: number,
    policy: string,
    consuming: boolean,
  ) => {
    const elapsed = now - index * size;
    const used = estimate(aligned, elapsed);
    if (cost > limit) {
      return costExceedsLimit(
        limit,
        Math.max(0, Math.floor(limit - used)),
        resetAfter(aligned, index, now, 0),
        policy,
      );
    }
    if (used + cost <= limit) {
      if (!consuming)
        return admitted(
          limit,
          Math.max(0, Math.floor(limit - used)),
          resetAfter(aligned, index, now, 0),
          policy,
        );
      return admitted(
        limit,
        Math.max(0, Math.floor(limit - used - cost)),
        resetAfter(aligned, index, now, cost),
        policy,
      );
    }
    return decide(
      false,
      limit,
      Math.max(0, Math.floor(limit - used)),
      resetAfter(aligned, index, now, 0),
      retryMs(waitFor(aligned, elapsed, cost)),
      0,
      policy,
      'rate-limited',
    );
  };

  return { align, subWindow, evaluate };
}
