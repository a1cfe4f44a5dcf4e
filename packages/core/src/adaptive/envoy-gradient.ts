import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions, integerOption } from '../validate.js';
import { boundsOption, clamp, type LimitController, rangeOption } from './controller.js';
import {
  addSample,
  openWindow,
  percentileOf,
  type RttSample,
  type WindowParams,
  type WindowState,
  windowParams,
} from './sample-window.js';

export interface EnvoyGradientOptions {
  /** The limit after the first minRTT measurement. Integer in `[minLimit, maxLimit]`. @default 3 */
  initialLimit?: number;
  /** The limit never goes below it (Envoy's `min_concurrency`). Integer ≥ 1. @default 3 */
  minLimit?: number;
  /** The limit never goes above it (Envoy's `max_concurrency_limit`). @default 1000 */
  maxLimit?: number;
  /** The limit while the minRTT is measured (Envoy's `min_concurrency`). Integer ≥ 1. @default 3 */
  minRttConcurrency?: number;
  /** Requests sampled to measure the minRTT (Envoy's `request_count`). Integer ≥ 1. @default 50 */
  minRttRequests?: number;
  /** Time between minRTT measurements (Envoy's `min_rtt_calc_params.interval`): ms or `'60s'`… @default '60s' */
  minRttInterval?: Duration;
  /** Up to this share of `minRttInterval` is added at random to each interval (Envoy's `jitter`), so hosts do not measure at once. In [0, 1]. @default 0.15 */
  jitter?: number;
  /** Latency allowed above the minRTT before the limit shrinks, as a share of it (Envoy's `buffer`). ≥ 0. @default 0.25 */
  buffer?: number;
  /** The percentile of a window's RTTs that stands for it (Envoy's `sample_aggregate_percentile`). In (0, 1]. @default 0.5 */
  percentile?: number;
  /**
   * How often the limit is recalculated (Envoy's `concurrency_update_interval`, which Envoy
   * requires): ms or `'100ms'`…, used as given.
   * @default 100 ms or 5 × the minRTT, whichever is longer (Envoy's documented 100 ms alone
   * swings the limit ×4 at RTTs of 50 ms and more: each window's RTTs are those of requests
   * admitted under the limit one or two windows before)
   */
  updateInterval?: Duration;
  /** RTTs below this, in ms, are ignored. 0 keeps every RTT. @default 0.1 */
  ignoreRttBelow?: number;
}

const KNOWN = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'minRttConcurrency',
  'minRttRequests',
  'minRttInterval',
  'jitter',
  'buffer',
  'percentile',
  'updateInterval',
  'ignoreRttBelow',
] as const satisfies readonly (keyof EnvoyGradientOptions)[];

/** Consecutive windows at `minLimit` after which the minRTT is measured again at once (Envoy's 5). */
const AT_MIN_REMEASURE = 5;
/** Without `updateInterval`: windows last this many minRTTs, at least `AUTO_MIN_INTERVAL` ms. */
const AUTO_RTTS = 5;
/** Windows lowering the limit at an RTT that does not fall, after which the minRTT is measured again. */
const STALE_REMEASURE = 5;
/**
 * How far below the RTT where such a run began a window's RTT may read and still count as not
 * fallen: a real window's p50 wobbles by a few percent from one window to the next, a queue that
 * drains as the limit falls takes far more off it.
 */
const STALE_TOLERANCE = 0.1;
const AUTO_MIN_INTERVAL = 100;

export interface EnvoyGradientParams {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly minRttConcurrency: number;
  readonly minRttRequests: number;
  /** ms. */
  readonly minRttInterval: number;
  readonly jitter: number;
  readonly buffer: number;
  /** ms; `undefined`: 100 ms or 5 × the minRTT, whichever is longer. */
  readonly updateInterval: number | undefined;
  readonly window: WindowParams;
}

export interface EnvoyGradientState {
  /** The limit in force, an integer (pinned to `minRttConcurrency` while measuring). */
  readonly limit: number;
  /** ms; `undefined` before the first measurement ends. */
  readonly minRtt: number | undefined;
  /** Measuring the minRTT: the limit to restore after it, else `undefined`. */
  readonly restore: number | undefined;
  /** ms the current measurement started: requests admitted before it are not sampled. */
  readonly epoch: number;
  /** RTTs gathered for the minRTT measurement. */
  readonly minRttSamples: readonly number[];
  /** ms at which the next measurement starts (while not measuring). */
  readonly nextMeasure: number;
  /** Consecutive windows that set the limit to `minLimit` from `minLimit`. */
  readonly atMin: number;
  /** Windows that lowered the limit while their RTT did not fall, since the run began (see `envoyGradientUpdate`). */
  readonly stale: number;
  /** ms: the RTT of the window before that run's first (`undefined` while no run). */
  readonly staleRtt: number | undefined;
  /** The last window's RTT, ms (`undefined` before one since the last measurement). */
  readonly sampleRtt: number | undefined;
  /** The windows' parameters: their span follows the minRTT when `updateInterval` is not set. */
  readonly windowParams: WindowParams;
  readonly window: WindowState;
}

export function envoyGradientParams(options: EnvoyGradientOptions = {}): EnvoyGradientParams {
  assertKnownOptions('envoyGradient', options, KNOWN);
  const bounds = boundsOption(options, { initialLimit: 3, minLimit: 3, maxLimit: 1000 });
  const minRttConcurrency = integerOption('minRttConcurrency', options.minRttConcurrency ?? 3);
  if (minRttConcurrency > bounds.maxLimit) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `minRttConcurrency must be ≤ maxLimit (${bounds.maxLimit}); got ${describeValue(minRttConcurrency)}`,
      { option: 'minRttConcurrency', value: minRttConcurrency },
    );
  }
  const updateInterval =
    options.updateInterval === undefined
      ? undefined
      : parseDuration('updateInterval', options.updateInterval);
  const span = updateInterval ?? AUTO_MIN_INTERVAL;
  return Object.freeze({
    ...bounds,
    minRttConcurrency,
    minRttRequests: integerOption('minRttRequests', options.minRttRequests ?? 50),
    minRttInterval: parseDuration('minRttInterval', options.minRttInterval ?? '60s'),
    jitter: rangeOption('jitter', options.jitter ?? 0.15, 0, 1),
    buffer: rangeOption('buffer', options.buffer ?? 0.25, 0, Number.POSITIVE_INFINITY),
    updateInterval,
    // Envoy's sample window is time-based: one aggregate per update interval, however few samples.
    window: windowParams(
      options.ignoreRttBelow === undefined ? {} : { ignoreRttBelow: options.ignoreRttBelow },
      { windowSamples: 1, minWindow: span, maxWindow: span },
      rangeOption('percentile', options.percentile ?? 0.5, 0, 1, { min: true }),
    ),
  });
}

/** Envoy starts by measuring the minRTT, the limit pinned; the initial limit follows it. */
export function envoyGradientStart(params: EnvoyGradientParams, now: number): EnvoyGradientState {
  return measuring(
    {
      limit: params.initialLimit,
      minRtt: undefined,
      atMin: 0,
      nextMeasure: now,
      windowParams: params.window,
      window: openWindow(params.window, now),
    },
    params,
    now,
  );
}

function measuring(
  state: Pick<EnvoyGradientState, 'limit' | 'minRtt' | 'atMin' | 'nextMeasure' | 'windowParams' | 'window'>,
  params: EnvoyGradientParams,
  now: number,
): EnvoyGradientState {
  return {
    ...state,
    restore: state.limit,
    limit: params.minRttConcurrency,
    epoch: now,
    minRttSamples: [],
    atMin: 0,
    stale: 0,
    staleRtt: undefined,
    sampleRtt: undefined,
  };
}

/** The windows' parameters once the minRTT is `minRtt`: `updateInterval`, else 5 minRTTs (≥ 100 ms). */
function windowsFor(params: EnvoyGradientParams, minRtt: number): WindowParams {
  if (params.updateInterval !== undefined) return params.window;
  const span = Math.max(AUTO_MIN_INTERVAL, AUTO_RTTS * minRtt);
  return { ...params.window, minWindow: span, maxWindow: span };
}

/**
 * The limit from one window's RTT, as Envoy's `GradientController::calculateNewLimit`:
 *
 *   gradient = clamp((minRTT + minRTT × buffer) / sampleRTT, 0.5, 2)
 *   limit'   = limit × gradient
 *   new      = ⌊limit' + √limit'⌋   (the √ is the burst headroom)
 *
 * clamped to `[minLimit, maxLimit]`.
 */
export function envoyGradientLimit(
  limit: number,
  minRtt: number,
  sampleRtt: number,
  params: EnvoyGradientParams,
): number {
  const gradient = clamp((minRtt + minRtt * params.buffer) / sampleRtt, 0.5, 2);
  const scaled = limit * gradient;
  return clamp(Math.floor(scaled + Math.sqrt(scaled)), params.minLimit, params.maxLimit);
}

/**
 * One finished request, as Envoy's adaptive concurrency filter's gradient controller:
 *
 * - Requests admitted before the current minRTT measurement started are not sampled, nor are
 *   drops (Envoy cancels their sample) or RTTs under `ignoreRttBelow`.
 * - Measuring: the RTT is kept; at `minRttRequests` RTTs, `minRTT` = their percentile, the limit
 *   from before the measurement is restored, and the next measurement is due
 *   `minRttInterval + ⌊draw × ⌈minRttInterval × jitter⌉⌋` ms later.
 * - Otherwise, a request ending past the due time starts a measurement (the limit pinned to
 *   `minRttConcurrency`); else its RTT joins the window, and each window (one `updateInterval`)
 *   that closes gives `sampleRTT` = its percentile and the limit `envoyGradientLimit`. Five
 *   windows in a row at `minLimit` start a measurement at once: the minRTT is likely wrong.
 * - Not Envoy's: a window whose requests never had half the limit in flight at once does not
 *   raise it (Gradient2's and AIMD's rule): below capacity the RTT stays at the minRTT, Envoy's
 *   gradient is 1.25 there, and its limit would climb to `maxLimit` and let a spike through whole.
 * - Not Envoy's: five windows that each lowered the limit, their requests reaching the new limit
 *   at once, while their `sampleRTT` stayed within 10% of the RTT of the window before the first
 *   of them (`STALE_TOLERANCE`), start a measurement at once too. A window that raises the limit,
 *   whose RTT falls further, or whose requests never reached the limit it set (a limit that does
 *   not bind shapes no queue, so an RTT that holds says nothing) ends the run; one that holds the
 *   limit neither counts nor ends it. A queue shrinks as a binding limit falls; an RTT that stays
 *   up while it falls is the service's own, slower now, and a minRTT from before the slowdown
 *   would hold the limit where `L = g·L + √(g·L)` (at twice the RTT, `g = 0.625`: L ≈ 4) until
 *   the next scheduled measurement, a minute away.
 */
export function envoyGradientUpdate(
  state: EnvoyGradientState,
  sample: RttSample,
  params: EnvoyGradientParams,
  draw: number,
): EnvoyGradientState {
  const rtt = sample.end - sample.start;
  if (state.restore !== undefined) {
    if (sample.start < state.epoch || sample.dropped || !(rtt >= params.window.ignoreRttBelow && rtt >= 0))
      return state;
    const minRttSamples = [...state.minRttSamples, rtt];
    if (minRttSamples.length < params.minRttRequests) return { ...state, minRttSamples };
    const spread = Math.ceil(params.minRttInterval * params.jitter);
    const minRtt = percentileOf(minRttSamples, params.window.percentile ?? 0.5);
    const windows = windowsFor(params, minRtt);
    return {
      ...state,
      limit: state.restore,
      restore: undefined,
      minRtt,
      minRttSamples: [],
      nextMeasure: sample.end + params.minRttInterval + Math.floor(draw * spread),
      windowParams: windows,
      window: openWindow(windows, sample.end),
    };
  }
  if (sample.end >= state.nextMeasure) return measuring(state, params, sample.end);
  if (sample.start < state.epoch) return state;
  const { window, closed } = addSample(state.window, sample, state.windowParams);
  if (closed?.rtt === undefined || state.minRtt === undefined) return { ...state, window };
  const gradient = envoyGradientLimit(state.limit, state.minRtt, closed.rtt, params);
  // Not Envoy's: no growth from a window that used under half the limit (Gradient2's and AIMD's
  // rule). Its RTT says nothing of what more would cost, and Envoy's limit climbs to
  // `maxLimit` under any load below capacity; a spike then meets no limit at all.
  const limit = gradient > state.limit && closed.maxInFlight * 2 < state.limit ? state.limit : gradient;
  const atMin = limit === params.minLimit && state.limit === params.minLimit ? state.atMin + 1 : 0;
  const { stale, staleRtt } = staleRun(state, limit, closed.rtt, closed.maxInFlight);
  if (atMin >= AT_MIN_REMEASURE || stale >= STALE_REMEASURE)
    return measuring({ ...state, limit, window }, params, sample.end);
  return { ...state, limit, atMin, stale, staleRtt, sampleRtt: closed.rtt, window };
}

/**
 * The run of windows lowering a binding limit at an RTT that does not fall, after a window that set
 * `limit` at `rtt` with at most `maxInFlight` requests in flight at once.
 */
function staleRun(
  state: EnvoyGradientState,
  limit: number,
  rtt: number,
  maxInFlight: number,
): Pick<EnvoyGradientState, 'stale' | 'staleRtt'> {
  const from = state.staleRtt ?? state.sampleRtt;
  if (from === undefined || limit > state.limit || maxInFlight < limit || rtt < (1 - STALE_TOLERANCE) * from)
    return { stale: 0, staleRtt: undefined };
  if (limit === state.limit) return { stale: state.stale, staleRtt: state.staleRtt };
  return { stale: state.stale + 1, staleRtt: from };
}

/**
 * Envoy's adaptive concurrency filter's gradient controller: the minRTT measured with the limit
 * pinned low, then every window (100 ms, or 5 minRTTs) `limit = gradient × limit + √(gradient × limit)`. See
 * `envoyGradientUpdate` and `envoyGradientLimit`.
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: envoyGradient({ minRttInterval: '30s' }) });
 */
export function envoyGradient(options: EnvoyGradientOptions = {}): LimitController<EnvoyGradientState> {
  const params = envoyGradientParams(options);
  return Object.freeze({
    kind: 'envoy-gradient' as const,
    minLimit: Math.min(params.minLimit, params.minRttConcurrency),
    maxLimit: params.maxLimit,
    params,
    start: (now: number) => envoyGradientStart(params, now),
    update: (state: EnvoyGradientState, sample: RttSample, draw: number) =>
      envoyGradientUpdate(state, sample, params, draw),
    limit: (state: EnvoyGradientState) => state.limit,
    rttNoLoad: (state: EnvoyGradientState) => state.minRtt,
  });
}
