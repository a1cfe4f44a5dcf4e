import { type Algorithm, EPSILON, fingerprint } from '../algorithm.js';
import type { AlgorithmParam } from '../algorithm-kinds.js';
import { admitted, ceilMs, costExceedsLimit, decide, retryMs } from '../decision.js';
import type { Duration } from '../duration.js';
import { assertKnownOptions } from '../validate.js';
import { limitWindow } from './limit-window.js';

export interface SlidingWindowLogOptions {
  /** Requests admitted in any window of `window` ms. Integer ≥ 1. */
  limit: number;
  /** Window length: ms or `'1m'`, `'1h'`… */
  window: Duration;
}

const KNOWN = ['limit', 'window'] as const satisfies readonly (keyof SlidingWindowLogOptions)[];

/**
 * Admitted units by millisecond, oldest first, flattened: `[time0, units0, time1, units1, …]` (one
 * entry per distinct time).
 */
export type SlidingWindowLogState = readonly number[];

/**
 * Sliding window log: exact. Never more than `limit` admitted in any `window` ms (a request at t
 * counts until t + window). Memory grows with the number of admitted requests in the window.
 * @example slidingWindowLog({ limit: 1000, window: '1h' })
 */
export function slidingWindowLog(options: SlidingWindowLogOptions): Algorithm<SlidingWindowLogState> {
  assertKnownOptions('slidingWindowLog', options, KNOWN);
  const { limit, window } = limitWindow(options);
  const params = { limit, window } satisfies Record<AlgorithmParam<'sliding-window-log'>, number>;

  const { firstLive, usedFrom, evaluate } = slidingWindowLogRules(limit, window);

  return {
    kind: 'sliding-window-log',
    params,
    fingerprint: fingerprint('sliding-window-log', params),
    limit,
    window,
    consume(state, now, cost, policy) {
      const log = state ?? EMPTY;
      const first = firstLive(log, now);
      const decision = evaluate(log, first, usedFrom(log, first), now, cost, policy, true);
      if (!decision.allowed) return { state, decision };
      return { state: admit(log, first, now, cost), decision };
    },
    peek(state, now, cost, policy) {
      const log = state ?? EMPTY;
      const first = firstLive(log, now);
      return evaluate(log, first, usedFrom(log, first), now, cost, policy, false);
    },
    ttl: (state, now) => (state.length === 0 ? 0 : state[state.length - 2]! + window - now),
    // Takes this request's units out of the entry of its millisecond.
    refund(state, now, cost) {
      for (let i = state.length - 2; i >= 0; i -= 2) {
        if (state[i] === now && state[i + 1]! >= cost) {
          const next = state.slice();
          if (next[i + 1] === cost) next.splice(i, 2);
          else next[i + 1]! -= cost;
          return next.length === 0 ? undefined : next;
        }
      }
      return state;
    },
  };
}

const EMPTY: SlidingWindowLogState = Object.freeze([]);

/**
 * The log from `first` on with `cost` units admitted at `now`, in one new array of its final
 * length (no spare room for `splice` to grow into). Requests in the same millisecond share one
 * entry: they leave the window together, so the decisions are the same and a busy key's log stays
 * at most one entry per millisecond. Replayed (client-supplied) times may arrive out of order:
 * the log stays sorted.
 */
function admit(log: SlidingWindowLogState, first: number, now: number, cost: number): number[] {
  let at = log.length;
  while (at > first && log[at - 2]! > now) at -= 2;
  if (at > first && log[at - 2] === now) {
    const kept = log.slice(first);
    kept[at - first - 1]! += cost;
    return kept;
  }
  const next = new Array<number>(log.length - first + 2);
  let j = 0;
  for (let i = first; i < at; i++) next[j++] = log[i]!;
  next[j++] = now;
  next[j++] = cost;
  for (let i = at; i < log.length; i++) next[j++] = log[i]!;
  return next;
}

/**
 * The sliding window log's arithmetic for one `limit` and `window`: the pure steps above and the
 * memory store's in-place step (`memory-in-place.ts`, which appends to the log it owns instead of
 * copying it on every request) are both built from it, so they cannot drift apart.
 */
export function slidingWindowLogRules(limit: number, window: number) {
  // Index of the first entry still inside (now - window, now].
  const firstLive = (log: SlidingWindowLogState, now: number): number => {
    let first = 0;
    // Time is read EPSILON ms late, as in every algorithm (so `ceilMs` can round a wait down by
    // as much): an entry that leaves the window EPSILON from now has left.
    while (first < log.length && log[first]! <= now + EPSILON - window) first += 2;
    return first;
  };
  // The units the entries from `first` on hold.
  const usedFrom = (log: SlidingWindowLogState, first: number): number => {
    let used = 0;
    for (let i = first + 1; i < log.length; i += 2) used += log[i]!;
    return used;
  };
  const evaluate = (
    log: SlidingWindowLogState,
    first: number,
    used: number,
    now: number,
    cost: number,
    policy: string,
    consuming: boolean,
  ) => {
    const newest = log.length > first ? log[log.length - 2]! : undefined;
    if (cost > limit) {
      return costExceedsLimit(
        limit,
        Math.max(0, limit - used),
        newest === undefined ? 0 : ceilMs(newest + window - now),
        policy,
      );
    }
    if (used + cost <= limit) {
      if (!consuming)
        return admitted(
          limit,
          limit - used,
          newest === undefined ? 0 : ceilMs(newest + window - now),
          policy,
        );
      return admitted(
        limit,
        limit - used - cost,
        ceilMs(Math.max(newest ?? now, now) + window - now),
        policy,
      );
    }
    // Wait until enough of the oldest entries have left the window.
    let freed = 0;
    let retryAt = now;
    for (let i = first; i < log.length && used - freed + cost > limit; i += 2) {
      freed += log[i + 1]!;
      retryAt = log[i]! + window;
    }
    return decide(
      false,
      limit,
      Math.max(0, limit - used),
      ceilMs(newest! + window - now),
      retryMs(retryAt - now),
      0,
      policy,
      'rate-limited',
    );
  };

  return { firstLive, usedFrom, evaluate };
}
