import { type Algorithm, fingerprint, slackFor } from '../algorithm.js';
import type { AlgorithmParam } from '../algorithm-kinds.js';
import { admitted, ceilMs, costExceedsLimit, type Decision, decide, retryMs } from '../decision.js';
import { assertSpan, type Duration, parseDuration } from '../duration.js';
import { ErrorCode, SluiceError } from '../errors.js';
import { assertUnit } from '../time-range.js';
import { assertKnownOptions, integerOption, requireOption } from '../validate.js';

export interface LeakyBucketQueueOptions {
  /** Requests served per `period` (the leak rate). Integer ≥ 1. */
  rate: number;
  /** The period of `rate`: ms or `'1s'`, `'1m'`… */
  period: Duration;
  /**
   * Requests served at once without waiting (nginx `limit_req … delay=burst-1`). Integer ≥ 1.
   * @default 1
   */
  burst?: number;
  /**
   * Requests that may wait for a slot beyond `burst` (nginx `limit_req … burst=`). Integer ≥ 0.
   * At least one of `queue` and `maxDelay` is required; with both, both bounds apply.
   */
  queue?: number;
  /** The longest a request may be told to wait: ms or `'2s'`… Longer waits are refused. */
  maxDelay?: Duration;
}

const KNOWN = [
  'rate',
  'period',
  'burst',
  'queue',
  'maxDelay',
] as const satisfies readonly (keyof LeakyBucketQueueOptions)[];

/** When the queue will have drained: the time the last admitted request's slot ends. */
export type LeakyBucketQueueState = number;

/**
 * Leaky bucket as a queue: instead of refusing, tell the caller how long to hold the request
 * (`decision.delay`) so requests leave at `rate` per `period`; refuse only when the queue is full
 * or the wait would exceed `maxDelay`. nginx `limit_req` with `burst` and `delay`.
 * @example leakyBucketQueue({ rate: 10, period: '1s', queue: 20 })
 */
export function leakyBucketQueue(options: LeakyBucketQueueOptions): Algorithm<LeakyBucketQueueState> {
  assertKnownOptions('leakyBucketQueue', options, KNOWN);
  const rate = integerOption('rate', requireOption('rate', options.rate));
  const period = parseDuration('period', requireOption('period', options.period));
  const burst = integerOption('burst', options.burst ?? 1);
  if (options.queue === undefined && options.maxDelay === undefined) {
    throw new SluiceError(
      ErrorCode.MISSING_OPTION,
      'leakyBucketQueue needs queue (requests that may wait) or maxDelay (longest wait)',
      {
        option: 'queue',
      },
    );
  }
  const interval = period / rate;
  assertUnit('period', options.period, interval, 'period / rate (the time per request)');
  const slack = slackFor(interval);
  const maxDelay =
    options.maxDelay === undefined ? Number.POSITIVE_INFINITY : parseDuration('maxDelay', options.maxDelay);
  const queue =
    options.queue === undefined
      ? Math.floor((maxDelay + slack) / interval)
      : integerOption('queue', options.queue, 0);
  // The deepest backlog either bound allows, in ms, and the most units it can ever hold: with a
  // maxDelay tighter than the queue, the queue is never reachable past it.
  const { room, capacity } = leakyBucketShape(
    rate,
    period,
    burst,
    queue,
    Number.isFinite(maxDelay) ? maxDelay : 0,
  );
  assertSpan('period', options.period, room, 'leakyBucketQueue: the longest backlog');
  const params = {
    rate,
    period,
    burst,
    queue,
    maxDelay: Number.isFinite(maxDelay) ? maxDelay : 0,
  } satisfies Record<AlgorithmParam<'leaky-bucket-queue'>, number>;

  const { evaluate } = leakyBucketRules(interval, slack, room, capacity, burst);

  return {
    kind: 'leaky-bucket-queue',
    params,
    fingerprint: fingerprint('leaky-bucket-queue', params),
    limit: capacity,
    window: capacity * interval,
    // The step is the transition itself: no second object on the hot path.
    consume: (state, now, cost, policy) => evaluate(state, now, cost, policy, true),
    peek: (state, now, cost, policy) => evaluate(state, now, cost, policy, false).decision,
    ttl: (state, now) => state - now,
    // The held request's slot leaves the queue: everyone behind keeps their turn, the next
    // arrival takes the freed place.
    refund(state, now, cost) {
      const drainAt = state - cost * interval;
      return drainAt <= now ? undefined : drainAt;
    },
  };
}

/**
 * The leaky bucket queue's arithmetic for one time per request (`interval`), `slack`, longest
 * backlog (`room`, ms), `capacity` and `burst`: the pure steps above and the memory store's
 * in-place step (`memory-in-place.ts`, which writes the new drain instant into the number it
 * holds without a transition object) are both built from it, so they cannot drift apart.
 */
export function leakyBucketRules(
  interval: number,
  slack: number,
  room: number,
  capacity: number,
  burst: number,
) {
  // Whole free places at `now` when the queue drains at `drain`. Outside `decideAt`: a closure
  // there would be a new function object on every decision.
  const free = (drain: number, now: number) =>
    Math.max(0, Math.min(capacity, Math.floor((room - (drain - now) + slack) / interval)));
  // The drain instant after admitting `cost` at `now` (when `decideAt` admits it).
  const next = (state: LeakyBucketQueueState | undefined, now: number, cost: number): number =>
    (state === undefined || state < now ? now : state) + cost * interval;
  const decideAt = (
    state: LeakyBucketQueueState | undefined,
    now: number,
    cost: number,
    policy: string,
    consuming: boolean,
  ): Decision => {
    const drainAt = state === undefined || state < now ? now : state;
    const newDrainAt = drainAt + cost * interval;
    // The queue ahead of and including this request, in ms (compared in ms, so the slack does not
    // scale with the rate); the first `burst` units go at once.
    const backlog = newDrainAt - now;
    const delay = Math.max(0, backlog - burst * interval);
    const allowed = backlog <= room + slack;
    if (allowed && !consuming) {
      return admitted(capacity, free(drainAt, now), ceilMs(drainAt - now, slack), policy);
    }
    if (allowed) {
      return decide(
        true,
        capacity,
        free(newDrainAt, now),
        ceilMs(newDrainAt - now, slack),
        0,
        ceilMs(delay, slack),
        policy,
        undefined,
      );
    }
    const remaining = free(drainAt, now);
    if (cost > capacity) return costExceedsLimit(capacity, remaining, ceilMs(drainAt - now, slack), policy);
    // Wait until the queue has drained enough for this cost to fit under both bounds.
    const wait = drainAt + cost * interval - room - now;
    return decide(
      false,
      capacity,
      remaining,
      ceilMs(drainAt - now, slack),
      retryMs(wait, slack),
      0,
      policy,
      'rate-limited',
    );
  };
  const evaluate = (
    state: LeakyBucketQueueState | undefined,
    now: number,
    cost: number,
    policy: string,
    consuming: boolean,
  ) => {
    const decision = decideAt(state, now, cost, policy, consuming);
    return { state: consuming && decision.allowed ? next(state, now, cost) : state, decision };
  };
  return { decideAt, next, evaluate };
}

/** The numbers `leakyBucketQueue` derives from its params, for a step built from `Algorithm.params`. */
export function leakyBucketShape(
  rate: number,
  period: number,
  burst: number,
  queue: number,
  maxDelayParam: number,
) {
  const interval = period / rate;
  const slack = slackFor(interval);
  const maxDelay = maxDelayParam === 0 ? Number.POSITIVE_INFINITY : maxDelayParam;
  const room = Math.min((burst + queue) * interval, burst * interval + maxDelay);
  const capacity = Math.min(burst + queue, burst + Math.floor((maxDelay + slack) / interval));
  return { interval, slack, room, capacity };
}
