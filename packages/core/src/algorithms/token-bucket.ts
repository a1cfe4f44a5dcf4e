import { type Algorithm, fingerprint, slackFor } from '../algorithm.js';
import type { AlgorithmParam } from '../algorithm-kinds.js';
import { admitted, ceilMs, costExceedsLimit, type Decision, decide, retryMs } from '../decision.js';
import { assertSpan, type Duration, parseDuration } from '../duration.js';
import { assertUnit } from '../time-range.js';
import { assertKnownOptions, booleanOption, integerOption, oneOfOption, requireOption } from '../validate.js';

export interface TokenBucketOptions {
  /** Most tokens the bucket holds: the largest burst. Integer ≥ 1. */
  capacity: number;
  /** Tokens added every `refillInterval`. Integer ≥ 1. @default capacity */
  refillAmount?: number;
  /** Time for `refillAmount` tokens to come back: ms or `'1s'`, `'1h'`… */
  refillInterval: Duration;
  /**
   * `'continuous'`: tokens trickle back smoothly (`refillAmount / refillInterval` per ms).
   * `'stepped'`: `refillAmount` tokens arrive at once every `refillInterval`, and progress toward
   * the next refill is kept between requests, also while the bucket is full (Smyte's `reduce`).
   * @default 'continuous'
   */
  refill?: 'continuous' | 'stepped';
  /**
   * Smyte's strict mode: a refused request restarts the refill clock, so a caller who keeps
   * sending while empty stays refused until it pauses for a whole refill. With continuous refill
   * the progress toward the next whole token is dropped.
   * @default false
   */
  strict?: boolean;
}

const KNOWN = [
  'capacity',
  'refillAmount',
  'refillInterval',
  'refill',
  'strict',
] as const satisfies readonly (keyof TokenBucketOptions)[];

/**
 * Continuous state: one number, the virtual instant at which the bucket held zero tokens
 * (tokens(now) = min(capacity, (now - emptyAt) / msPerToken)). One number per key keeps the memory
 * store near 100 bytes per key.
 * Stepped state: `[tokens, lastRefill]`, Smyte's `value` and `lastUpdate`.
 */
export type TokenBucketState = number | readonly [tokens: number, lastRefill: number];

/**
 * Token bucket: bursts up to `capacity`, sustained rate `refillAmount` per `refillInterval`.
 * @example tokenBucket({ capacity: 20, refillAmount: 10, refillInterval: '1s' })
 */
export function tokenBucket(options: TokenBucketOptions): Algorithm<TokenBucketState> {
  assertKnownOptions('tokenBucket', options, KNOWN);
  const capacity = integerOption('capacity', requireOption('capacity', options.capacity));
  const refillAmount = integerOption('refillAmount', options.refillAmount ?? capacity);
  const interval = parseDuration('refillInterval', requireOption('refillInterval', options.refillInterval));
  const stepped =
    oneOfOption('refill', options.refill ?? 'continuous', ['continuous', 'stepped']) === 'stepped';
  const strict = booleanOption('strict', options.strict ?? false);
  if (stepped) assertUnit('refillInterval', options.refillInterval, interval, 'refillInterval');
  else
    assertUnit(
      'refillInterval',
      options.refillInterval,
      interval / refillAmount,
      'refillInterval / refillAmount (the time per token)',
    );
  // An empty bucket refills in capacity / refillAmount intervals (stepped: whole intervals).
  assertSpan(
    'refillInterval',
    options.refillInterval,
    Math.ceil(capacity / refillAmount) * interval,
    'tokenBucket: the time to refill an empty bucket',
  );
  const params = {
    capacity,
    refillAmount,
    refillInterval: interval,
    stepped: stepped ? 1 : 0,
    strict: strict ? 1 : 0,
  } satisfies Record<AlgorithmParam<'token-bucket'>, number>;
  const base = {
    kind: 'token-bucket' as const,
    params,
    fingerprint: fingerprint('token-bucket', params),
    limit: capacity,
    window: (interval * capacity) / refillAmount,
  };
  return stepped
    ? { ...base, ...steppedBucket(capacity, refillAmount, interval, strict) }
    : { ...base, ...continuousBucket(capacity, interval / refillAmount, strict) };
}

type Steps<S> = Pick<Algorithm<S>, 'consume' | 'peek' | 'ttl' | 'refund'>;

function continuousBucket(capacity: number, msPerToken: number, strict: boolean): Steps<TokenBucketState> {
  const fullSpan = capacity * msPerToken;
  const { emptyAt, whole, peek, admit, next } = continuousRules(capacity, msPerToken);
  return {
    peek,
    consume(state, now, cost, policy) {
      const decision = admit(state, now, cost, policy);
      if (decision !== undefined) return { state: next(state, now, cost), decision };
      if (!strict || cost > capacity) return { state, decision: peek(state, now, cost, policy) };
      // Strict: keep the whole tokens, drop the progress toward the next one, restart the clock now.
      const restart = now - whole(now - emptyAt(state, now)) * msPerToken;
      return { state: restart, decision: peek(restart, now, cost, policy) };
    },
    ttl: (state, now) => (state as number) + fullSpan - now,
    // The tokens go back: the empty instant moves back by their refill time.
    refund: (state, now, cost) => {
      const emptyAt = (state as number) - cost * msPerToken;
      return emptyAt <= now - fullSpan ? undefined : emptyAt;
    },
  };
}

/**
 * The continuous bucket's arithmetic for one `capacity` and time per token: the pure steps above
 * and the memory store's in-place step (`memory-in-place.ts`, which writes the new state into the number
 * it holds without a transition object) are both built from it, so they cannot drift apart.
 */
export function continuousRules(capacity: number, msPerToken: number) {
  const fullSpan = capacity * msPerToken;
  const slack = slackFor(msPerToken);
  // A bucket that has been idle long enough is full: clamp the empty instant.
  const emptyAt = (state: TokenBucketState | undefined, now: number): number => {
    const floor = now - fullSpan;
    return state === undefined || (state as number) < floor ? floor : (state as number);
  };
  // Whole tokens in `accrued` ms of refill. Compared in ms, not tokens: a slack in tokens would
  // grow with msPerToken (1e-6 token is 3.6 ms at one token per hour).
  const whole = (accrued: number) =>
    Math.max(0, Math.min(capacity, Math.floor((accrued + slack) / msPerToken)));
  const peek = (state: TokenBucketState | undefined, now: number, cost: number, policy: string) => {
    const empty = emptyAt(state, now);
    const accrued = now - empty;
    const resetAfter = ceilMs(empty + fullSpan - now, slack);
    if (cost > capacity) return costExceedsLimit(capacity, whole(accrued), resetAfter, policy);
    if (accrued + slack >= cost * msPerToken) return admitted(capacity, whole(accrued), resetAfter, policy);
    return decide(
      false,
      capacity,
      whole(accrued),
      resetAfter,
      retryMs(empty + cost * msPerToken - now, slack),
      0,
      policy,
      'rate-limited',
    );
  };
  // The state after admitting `cost` at `now` (when `admit` admits it).
  const next = (state: TokenBucketState | undefined, now: number, cost: number): number =>
    emptyAt(state, now) + cost * msPerToken;
  // The admission of `cost` at `now`, `undefined` when it does not fit.
  const admit = (
    state: TokenBucketState | undefined,
    now: number,
    cost: number,
    policy: string,
  ): Decision | undefined => {
    const empty = emptyAt(state, now);
    if (cost > capacity || now - empty + slack < cost * msPerToken) return undefined;
    const after = empty + cost * msPerToken;
    return admitted(capacity, whole(now - after), ceilMs(after + fullSpan - now, slack), policy);
  };
  return { emptyAt, whole, peek, admit, next };
}

function steppedBucket(
  capacity: number,
  amount: number,
  interval: number,
  strict: boolean,
): Steps<TokenBucketState> {
  const slack = slackFor(interval);
  // Refills that bring any state, even an empty one, to full: a state that has seen no refill
  // mark for that long is dropped (its ttl ends), as Smyte's compaction filter drops a bucket that
  // would be full anyway. Until then the refill grid of the state holds; at the drop the state
  // refills to exactly what a fresh key holds (full, refilled now), so expiring it changes nothing.
  const span = Math.ceil(capacity / amount) * interval;
  // Smyte's refill (adjustAmount): whole steps since the last refill, the refill mark advanced by
  // whole steps even while the bucket is capped at full, so the progress toward the next refill
  // is kept.
  const refill = (state: TokenBucketState | undefined, now: number): readonly [number, number] => {
    if (state === undefined) return [capacity, now];
    const [tokens, last] = state as readonly [number, number];
    if (last + span <= now) return [capacity, now];
    const steps = now > last ? Math.floor((now - last + slack) / interval) : 0;
    return [Math.min(capacity, tokens + steps * amount), last + steps * interval];
  };
  const timeToReach = (tokens: number, last: number, want: number, now: number) =>
    tokens >= want ? 0 : ceilMs(last + Math.ceil((want - tokens) / amount) * interval - now, slack);
  const timeToRetry = (tokens: number, last: number, want: number, now: number) =>
    retryMs(last + Math.ceil((want - tokens) / amount) * interval - now, slack);
  const report = (tokens: number, last: number, now: number, cost: number, policy: string) => {
    const resetAfter = timeToReach(tokens, last, capacity, now);
    if (cost > capacity) return costExceedsLimit(capacity, tokens, resetAfter, policy);
    if (tokens >= cost) return admitted(capacity, tokens, resetAfter, policy);
    return decide(
      false,
      capacity,
      tokens,
      resetAfter,
      timeToRetry(tokens, last, cost, now),
      0,
      policy,
      'rate-limited',
    );
  };
  return {
    peek(state, now, cost, policy) {
      const [tokens, last] = refill(state, now);
      return report(tokens, last, now, cost, policy);
    },
    consume(state, now, cost, policy) {
      const [tokens, last] = refill(state, now);
      if (cost <= capacity && tokens >= cost) {
        const left = tokens - cost;
        return {
          state: [left, last],
          decision: admitted(capacity, left, timeToReach(left, last, capacity, now), policy),
        };
      }
      // A refusal writes nothing, except that a strict bucket restarts its refill clock (keeping
      // the tokens in hand) when the cost could fit.
      if (!strict || cost > capacity) return { state, decision: report(tokens, last, now, cost, policy) };
      return { state: [tokens, now], decision: report(tokens, now, now, cost, policy) };
    },
    ttl: (state, now) => (state as readonly [number, number])[1] + span - now,
    // The tokens go back; the refill mark stays (a full bucket keeps its progress, see `refill`).
    // Full again with its mark at `now`, the state is the one a fresh key's first request leaves
    // (or a full bucket whose refill fell exactly on `now`): it is dropped, since a fresh key is
    // never more generous than a full bucket with progress (its next refill is a whole interval
    // after its next request), so a refund never over-admits.
    refund(state, now, cost) {
      const [tokens, last] = state as readonly [number, number];
      if (tokens + cost >= capacity) return last === now ? undefined : [capacity, last];
      return [tokens + cost, last];
    },
  };
}
