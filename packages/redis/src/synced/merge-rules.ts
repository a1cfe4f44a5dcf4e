import { type Algorithm, ErrorCode, SluiceError } from '@sluice/core';
import { EPSILON } from '@sluice/core/adapter';

/**
 * What one node consumed on one key since it last sent: a delta the sync script adds to the
 * fleet's state in Redis, and that the node adds to the state Redis sends back (its local view).
 * Shapes by rule: counter `[count, windowStart]`, sub-windows `[index, c0, …, cP]`, virtual clock
 * `[step, floor]` (see each rule).
 */
export type Delta = number[];

/**
 * How the consumption of several nodes on one key adds up, for one algorithm: the TypeScript twin
 * of its branch of the sync script (`scripts/sync-script.ts`), which must give the same states.
 * The README ("Local-first, synced") proves each rule.
 */
export interface MergeRule {
  /** Its branch of the sync script: 1 counter, 2 sub-windows, 3 virtual clock. */
  readonly code: 1 | 2 | 3;
  /** The params the script needs after the code, before the delta (see `sync-script.ts`). */
  readonly params: readonly number[];
  /**
   * The delta after one more admission of `cost` at `now`; `view` is the algorithm's state after
   * that admission (it holds the window or sub-window the units were counted in). Updates `delta`
   * in place when it can (no allocation per request); a delta is never shared.
   */
  add(delta: Delta | undefined, view: unknown, now: number, cost: number): Delta;
  /**
   * The delta after `cost` units admitted earlier were given back at `now` (`Algorithm.refund`),
   * which changed the view from `before` to `after`. Counters send what the view lost (the
   * algorithm's refund stops at zero, and a count clamped later would not add up: 3 − 5 + 1 is
   * not max(0, 3 − 5) + 1); the virtual clock sends the refund's own map, which composes exactly.
   * `share`: the view counts each unit `1 / share` (an outage, `outageShare`), so what it lost is
   * scaled back to units before it is sent. Updates `delta` in place when it can.
   */
  refund(
    delta: Delta | undefined,
    before: unknown,
    after: unknown,
    now: number,
    cost: number,
    share: number,
  ): Delta;
  /** `state` (the fleet's, from Redis; undefined when none) with `delta` added. */
  merge(state: unknown, delta: Delta): unknown;
}

/**
 * The units a view that counts each one `1 / share` lost (`share` < 1 in an outage), rounded down
 * (the safe side: a float product such as 3 × ⅓ must not send 0.9999…).
 */
function units(lost: number, share: number): number {
  return share === 1 ? lost : Math.floor(lost * share + 1e-9);
}

/**
 * Fixed window: a count per window, so counts add. A delta of a window older than the state's is
 * dropped (its window is over, for every node whose clock is past it); a newer one replaces it.
 */
function counterRule(window: number): MergeRule {
  const add = (delta: Delta | undefined, view: unknown, cost: number): Delta => {
    const start = (view as readonly number[])[1]!;
    if (delta === undefined || delta[1] !== start) return [cost, start];
    delta[0]! += cost;
    return delta;
  };
  return {
    code: 1,
    params: [window],
    add: (delta, view, _now, cost) => add(delta, view, cost),
    // A refund changes only the view's own window (the algorithm's refund leaves an older one as
    // it is): what that window's count lost comes off the fleet's, which stops at 0.
    refund: (delta, before, after, _now, _cost, share) =>
      add(
        delta,
        before,
        -units(
          (before as readonly number[])[0]! - ((after as readonly number[] | undefined)?.[0] ?? 0),
          share,
        ),
      ),
    merge(state, delta) {
      const s = state as readonly number[] | undefined;
      if (s === undefined || s[1]! < delta[1]!) return delta[0]! >= 0 ? delta.slice() : [0, delta[1]!];
      return s[1] === delta[1] ? [Math.max(0, s[0]! + delta[0]!), s[1]!] : s;
    },
  };
}

/**
 * Two sub-window lists `[index, newest, …, oldest]` added count by count, aligned on the newer
 * index. `clamp`: the sum is a state (a refund's negative counts stop at 0); two deltas add as they are.
 */
function addSubWindows(
  a: readonly number[],
  b: readonly number[],
  precision: number,
  clamp = false,
): number[] {
  const index = Math.max(a[0]!, b[0]!);
  const out = new Array<number>(precision + 2).fill(0);
  out[0] = index;
  for (const list of [a, b]) {
    const shift = index - list[0]!;
    for (let i = 0; i + shift <= precision; i++) out[i + shift + 1]! += list[i + 1]!;
  }
  if (clamp) for (let i = 1; i < out.length; i++) if (out[i]! < 0) out[i] = 0;
  return out;
}

/** Sliding window counter: counts per sub-window, so counts add sub-window by sub-window. */
function subWindowRule(precision: number, size: number): MergeRule {
  return {
    code: 2,
    params: [precision, size],
    add(delta, view, _now, cost) {
      const index = (view as readonly number[])[0]!;
      const unit = new Array<number>(precision + 2).fill(0);
      unit[0] = index;
      unit[1] = cost;
      return delta === undefined ? unit : addSubWindows(delta, unit, precision);
    },
    // As the algorithm's refund: what the sub-window of `now` lost (counted from the view's
    // newest) comes off the fleet's, which stops at 0.
    refund(delta, before, after, now, _cost, share) {
      const from = before as readonly number[];
      const index = from[0]!;
      const at = index - Math.floor((now + EPSILON) / size) + 1;
      const unit = new Array<number>(precision + 2).fill(0);
      unit[0] = index;
      unit[at] = -units(from[at]! - ((after as readonly number[] | undefined)?.[at] ?? 0), share);
      return delta === undefined ? unit : addSubWindows(delta, unit, precision);
    },
    merge(state, delta) {
      return state === undefined
        ? delta.map((count, i) => (i > 0 && count < 0 ? 0 : count))
        : addSubWindows(state as readonly number[], delta, precision, true);
    },
  };
}

/**
 * Token bucket (continuous) and GCRA are one algorithm over a virtual clock `x` (the bucket's
 * empty instant; the GCRA's TAT): `cost` units at `now` make `x ← max(x, now − offset) + cost·unit`
 * (offset: the time to fill the bucket, 0 for GCRA). A run of admissions is the map
 * `x ↦ max(x + step, floor)`: `step` the sum of their `cost·unit`, `floor` the value a run that
 * found the clock clamped at its start would end at. Such maps compose exactly (the README's
 * proof), and applying several nodes' runs one after another never gives a clock earlier than
 * any interleaving of their admissions: the merge never returns units.
 */
function virtualClockRule(unit: number, offset: number): MergeRule {
  return {
    code: 3,
    params: [offset],
    add(delta, _view, now, cost) {
      const step = cost * unit;
      const floor = now - offset + step;
      if (delta === undefined) return [step, floor];
      delta[1] = Math.max(delta[1]! + step, floor);
      delta[0]! += step;
      return delta;
    },
    // A refund is the map x ↦ max(x − cost·unit, now − offset) (the clock never goes back past a
    // full limit), and composes with the run's map as any admission does: still max(x + step, floor).
    refund(delta, _before, _after, now, cost) {
      const back = cost * unit;
      const full = now - offset;
      if (delta === undefined) return [-back, full];
      delta[1] = Math.max(delta[1]! - back, full);
      delta[0]! -= back;
      return delta;
    },
    merge(state, delta) {
      return state === undefined ? delta[1]! : Math.max((state as number) + delta[0]!, delta[1]!);
    },
  };
}

const rules = new WeakMap<Algorithm, MergeRule>();

/**
 * Why a kind cannot be synced: its decisions depend on the order of every admission across the
 * fleet, which no node sees before the next sync.
 */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  'sliding-window-log':
    'its state is every admission time, so a node would ship its log each cycle and the fleet could not agree on which entries are in the window; use slidingWindowCounter',
  'leaky-bucket-queue':
    "each admission gets the next slot of one queue, so two nodes would hand out the same slots (the queue's spacing is its point); use RedisStore",
  stepped:
    "a stepped bucket's refill grid starts at its first request, which each node would set apart; use refill: 'continuous'",
  strict:
    'a refused request restarts the refill clock, which is not a count of units other nodes can add; use a non-strict bucket',
};

function unsupported(algorithm: Algorithm, why: string): SluiceError {
  return new SluiceError(
    ErrorCode.UNSUPPORTED,
    `SyncedStore: ${algorithm.kind} cannot be synced exactly enough: ${why}`,
    { option: 'algorithm', value: algorithm.kind },
  );
}

/**
 * The merge rule of an algorithm, made once per algorithm object. Throws `ERR_SLUICE_UNSUPPORTED`
 * for the kinds the store refuses (see `UNSUPPORTED`).
 */
export function mergeRule(algorithm: Algorithm): MergeRule {
  let rule = rules.get(algorithm);
  if (rule !== undefined) return rule;
  const p = algorithm.params;
  switch (algorithm.kind) {
    case 'fixed-window':
      rule = counterRule(p.window!);
      break;
    case 'sliding-window-counter':
      rule = subWindowRule(p.precision!, p.window! / p.precision!);
      break;
    case 'token-bucket': {
      if (p.stepped === 1) throw unsupported(algorithm, UNSUPPORTED.stepped!);
      if (p.strict === 1) throw unsupported(algorithm, UNSUPPORTED.strict!);
      const unit = p.refillInterval! / p.refillAmount!;
      rule = virtualClockRule(unit, p.capacity! * unit);
      break;
    }
    case 'gcra':
      rule = virtualClockRule(p.period! / p.rate!, 0);
      break;
    default:
      throw unsupported(algorithm, UNSUPPORTED[algorithm.kind] ?? 'it is not a built-in kind');
  }
  rules.set(algorithm, rule);
  return rule;
}
