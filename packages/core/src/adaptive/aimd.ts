import { type Duration, parseDuration } from '../duration.js';
import { assertKnownOptions } from '../validate.js';
import { boundsOption, clamp, type LimitController, rangeOption } from './controller.js';
import {
  addSample,
  openWindow,
  type RttSample,
  type WindowOptions,
  type WindowParams,
  type WindowState,
  type WindowSummary,
  windowParams,
} from './sample-window.js';

export interface AimdOptions extends WindowOptions {
  /** The limit before any sample. Integer in `[minLimit, maxLimit]`. @default 20 */
  initialLimit?: number;
  /** The limit never goes below it. Integer ≥ 1. @default 20 */
  minLimit?: number;
  /** The limit never goes above it. @default 200 */
  maxLimit?: number;
  /** The limit is multiplied by it on a drop. In [0.5, 1), as Netflix checks. @default 0.9 */
  backoffRatio?: number;
  /** A request slower than this counts as a drop: ms or `'5s'`… @default '5s' */
  timeout?: Duration;
}

const KNOWN = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'backoffRatio',
  'timeout',
  'windowSamples',
  'minWindow',
  'maxWindow',
  'ignoreRttBelow',
] as const satisfies readonly (keyof AimdOptions)[];

export interface AimdParams {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly backoffRatio: number;
  /** ms. */
  readonly timeout: number;
  readonly window: WindowParams;
}

export interface AimdState {
  /** The limit in force, an integer. */
  readonly limit: number;
  readonly window: WindowState;
}

export function aimdParams(options: AimdOptions = {}): AimdParams {
  assertKnownOptions('aimd', options, KNOWN);
  const bounds = boundsOption(options, { initialLimit: 20, minLimit: 20, maxLimit: 200 });
  return Object.freeze({
    ...bounds,
    backoffRatio: rangeOption('backoffRatio', options.backoffRatio ?? 0.9, 0.5, 1, { max: true }),
    timeout: parseDuration('timeout', options.timeout ?? '5s'),
    window: windowParams(options, { windowSamples: 10, minWindow: '1s', maxWindow: '1s' }),
  });
}

export function aimdStart(params: AimdParams, now: number): AimdState {
  return { limit: params.initialLimit, window: openWindow(params.window, now) };
}

/**
 * One closed window, as Netflix concurrency-limits' `AIMDLimit._update` (loss-based, as TCP Reno):
 *
 * - a drop in the window (a request slower than `timeout` is marked a drop as it is sampled):
 *   `limit = max(1, min(limit − 1, ⌊limit × backoffRatio⌋))`, so it always falls by at least 1;
 * - else, when `2 × maxInFlight ≥ limit` (the application uses at least half of it): `limit + 1`;
 * - else the limit holds;
 *
 * then clamped to `[minLimit, maxLimit]`.
 */
export function aimdUpdate(state: AimdState, summary: WindowSummary, params: AimdParams): AimdState {
  let limit = state.limit;
  if (summary.dropped) limit = Math.max(1, Math.min(limit - 1, Math.floor(limit * params.backoffRatio)));
  else if (summary.maxInFlight * 2 >= limit) limit += 1;
  else return state;
  return { ...state, limit: clamp(limit, params.minLimit, params.maxLimit) };
}

/**
 * Netflix concurrency-limits' AIMD limit (`AIMDLimit`): additive increase, multiplicative decrease
 * on drops and timeouts, over windows of at least 10 samples lasting 1 s. See `aimdUpdate`.
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: aimd({ timeout: '2s' }) });
 */
export function aimd(options: AimdOptions = {}): LimitController<AimdState> {
  const params = aimdParams(options);
  return Object.freeze({
    kind: 'aimd' as const,
    minLimit: params.minLimit,
    maxLimit: params.maxLimit,
    params,
    start: (now: number) => aimdStart(params, now),
    update(state: AimdState, sample: RttSample): AimdState {
      const timedOut = !sample.dropped && sample.end - sample.start > params.timeout;
      const seen = timedOut ? { ...sample, dropped: true } : sample;
      const { window, closed } = addSample(state.window, seen, params.window);
      const moved = { ...state, window };
      return closed === undefined ? moved : aimdUpdate(moved, closed, params);
    },
    limit: (state: AimdState) => state.limit,
    rttNoLoad: () => undefined,
  });
}
