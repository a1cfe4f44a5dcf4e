import { assertKnownOptions, integerOption } from '../validate.js';
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

export interface Gradient2Options extends WindowOptions {
  /** The limit before any sample. Integer in `[minLimit, maxLimit]`. @default 20 */
  initialLimit?: number;
  /** The limit never goes below it. Integer ≥ 1. @default 20 */
  minLimit?: number;
  /** The limit never goes above it (Netflix's `maxConcurrency`). @default 200 */
  maxLimit?: number;
  /** Weight of the new estimate: `limit = (1 − s) · limit + s · new`. In (0, 1]. @default 0.2 */
  smoothing?: number;
  /** How far the short RTT may rise above the long one before the limit shrinks: ≥ 1. @default 1.5 */
  rttTolerance?: number;
  /** What the limit grows by per window while latency holds (Netflix's `queueSize`). Integer ≥ 0. @default 4 */
  queueSize?: number;
  /** Windows the long RTT's exponential average spans (Netflix's `longWindow`). Integer ≥ 1. @default 600 */
  longWindow?: number;
}

const KNOWN = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'smoothing',
  'rttTolerance',
  'queueSize',
  'longWindow',
  'windowSamples',
  'minWindow',
  'maxWindow',
  'ignoreRttBelow',
] as const satisfies readonly (keyof Gradient2Options)[];

/** Windows averaged plainly before the exponential average takes over (Netflix's warm-up). */
const WARMUP = 10;

export interface Gradient2Params {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly smoothing: number;
  readonly rttTolerance: number;
  readonly queueSize: number;
  readonly longWindow: number;
  readonly window: WindowParams;
}

export interface Gradient2State {
  /** The estimated limit, fractional (the limit in force is its integer part). */
  readonly estimate: number;
  /** The long RTT, ms: an exponential average of window RTTs; 0 before the first. */
  readonly longRtt: number;
  /** Windows averaged so far, up to the warm-up's 10. */
  readonly warm: number;
  /** Sum of the warm-up windows' RTTs (the warm-up average is `sum / warm`). */
  readonly sum: number;
  readonly window: WindowState;
}

export function gradient2Params(options: Gradient2Options = {}): Gradient2Params {
  assertKnownOptions('gradient2', options, KNOWN);
  const bounds = boundsOption(options, { initialLimit: 20, minLimit: 20, maxLimit: 200 });
  return Object.freeze({
    ...bounds,
    smoothing: rangeOption('smoothing', options.smoothing ?? 0.2, 0, 1, { min: true }),
    rttTolerance: rangeOption('rttTolerance', options.rttTolerance ?? 1.5, 1, Number.POSITIVE_INFINITY),
    queueSize: integerOption('queueSize', options.queueSize ?? 4, 0),
    longWindow: integerOption('longWindow', options.longWindow ?? 600),
    window: windowParams(options, { windowSamples: 10, minWindow: '1s', maxWindow: '1s' }),
  });
}

export function gradient2Start(params: Gradient2Params, now: number): Gradient2State {
  return {
    estimate: params.initialLimit,
    longRtt: 0,
    warm: 0,
    sum: 0,
    window: openWindow(params.window, now),
  };
}

/**
 * One closed window, as Netflix concurrency-limits' `Gradient2Limit._update`, with `short` the
 * window's mean RTT:
 *
 * 1. `long` is an exponential average of window RTTs: the plain mean of the first 10 (Netflix's
 *    `ExpAvgMeasurement` warm-up), then `long = long · (1 − f) + short · f`, `f = 2 / (longWindow + 1)`.
 * 2. When `long / short > 2` (latency fell back after a long overload), `long = long × 0.9`, so
 *    the baseline need not wait for the slow average.
 * 3. While `maxInFlight < limit / 2` (the application does not use the limit), the limit holds.
 * 4. `gradient = max(0.5, min(1, rttTolerance · long / short))`: 1 while the short RTT is within
 *    the tolerance of the long one, down to 0.5 (halving at most) as a queue builds.
 * 5. `new = limit · gradient + queueSize`; `new = limit · (1 − smoothing) + new · smoothing`,
 *    clamped to `[minLimit, maxLimit]`.
 *
 * Netflix's Gradient2 ignores drops, and so does this one: a window of drops only changes nothing
 * (use AIMD or Vegas where drops are the signal).
 */
export function gradient2Update(
  state: Gradient2State,
  summary: WindowSummary,
  params: Gradient2Params,
): Gradient2State {
  if (summary.rtt === undefined) return state;
  const short = summary.rtt;
  const warming = state.warm < WARMUP;
  const warm = warming ? state.warm + 1 : WARMUP;
  const sum = warming ? state.sum + short : state.sum;
  const f = 2 / (params.longWindow + 1);
  let long = warming ? sum / warm : state.longRtt * (1 - f) + short * f;
  if (long / short > 2) long *= 0.9;
  const limit = state.estimate;
  if (summary.maxInFlight < limit / 2) return { ...state, longRtt: long, warm, sum };
  const gradient = Math.max(0.5, Math.min(1, (params.rttTolerance * long) / short));
  const target = limit * gradient + params.queueSize;
  const estimate = clamp(
    limit * (1 - params.smoothing) + target * params.smoothing,
    params.minLimit,
    params.maxLimit,
  );
  return { ...state, estimate, longRtt: long, warm, sum };
}

/**
 * Netflix concurrency-limits' Gradient2 limit (`Gradient2Limit`), over windows of at least 10
 * samples lasting 1 s. See `gradient2Update` for the formula.
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: gradient2({ maxLimit: 1000 }) });
 */
export function gradient2(options: Gradient2Options = {}): LimitController<Gradient2State> {
  const params = gradient2Params(options);
  return Object.freeze({
    kind: 'gradient2' as const,
    minLimit: params.minLimit,
    maxLimit: params.maxLimit,
    params,
    start: (now: number) => gradient2Start(params, now),
    update(state: Gradient2State, sample: RttSample): Gradient2State {
      const { window, closed } = addSample(state.window, sample, params.window);
      const moved = { ...state, window };
      return closed === undefined ? moved : gradient2Update(moved, closed, params);
    },
    limit: (state: Gradient2State) => clamp(Math.trunc(state.estimate), params.minLimit, params.maxLimit),
    rttNoLoad: (state: Gradient2State) => (state.warm === 0 ? undefined : state.longRtt),
  });
}
