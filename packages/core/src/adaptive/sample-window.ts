import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { integerOption } from '../validate.js';

/** One finished request, as the limiter reports it to a controller. Times in ms. */
export interface RttSample {
  /** When the request was admitted. */
  readonly start: number;
  /** When it ended (its response finished, or it was dropped). */
  readonly end: number;
  /** Requests in flight when it was admitted, itself included. */
  readonly inFlight: number;
  /** A drop: a timeout, a 5xx the app marked, a refusal by a downstream. */
  readonly dropped: boolean;
}

/** How samples are grouped before a controller sees them. */
export interface WindowOptions {
  /**
   * Fewest samples (drops included) a window needs: one still short of them at its end stays
   * open until it has them. Integer ≥ 1 (Netflix's `WindowedLimit` requires ≥ 10).
   * @default 10
   */
  windowSamples?: number;
  /** Shortest window: ms or `'1s'`…; a window lasts twice its smallest RTT, within these bounds. @default '1s' */
  minWindow?: Duration;
  /** Longest window: ms or `'1s'`…, ≥ `minWindow`. @default '1s' */
  maxWindow?: Duration;
  /**
   * RTTs below this, in ms, are ignored: too fast to be real work (a cache hit, an error answered
   * at once), they would drag the no-load RTT down. 0 keeps every RTT.
   * @default 0.1 (100 µs, Netflix's `minRttThreshold`)
   */
  ignoreRttBelow?: number;
}

/** Validated window parameters. Times in ms. */
export interface WindowParams {
  readonly windowSamples: number;
  readonly minWindow: number;
  readonly maxWindow: number;
  readonly ignoreRttBelow: number;
  /** `undefined`: the window's RTT is the mean (Netflix); a number in (0, 1]: that percentile (Envoy). */
  readonly percentile: number | undefined;
}

/**
 * An open window. `rtts` (kept only for a percentile) is shared, append-only, between successive
 * states: a state reads only its first `kept` entries, so older states stay valid while the newest
 * appends, without a copy per sample. Appending to a state that is not the newest copies first.
 */
export interface WindowState {
  /** ms at which the window closes: the first sample ending after it closes it. */
  readonly end: number;
  /** Samples counted, drops included. */
  readonly count: number;
  /** RTTs recorded (drops record none). */
  readonly kept: number;
  readonly sum: number;
  /** Smallest RTT recorded; Infinity when none. */
  readonly min: number;
  readonly maxInFlight: number;
  readonly dropped: boolean;
  readonly rtts: number[];
}

/** What a closed window hands to a controller. */
export interface WindowSummary {
  /** The window's RTT (mean, or the percentile), ms; `undefined` when it holds only drops. */
  readonly rtt: number | undefined;
  /** Smallest RTT in the window, ms; `undefined` when it holds only drops. */
  readonly minRtt: number | undefined;
  /** Most requests in flight at any admission in the window. */
  readonly maxInFlight: number;
  /** Whether any sample in the window was a drop. */
  readonly dropped: boolean;
  readonly samples: number;
}

/** A window opened at `now`, lasting `2 × lastMinRtt` within `[minWindow, maxWindow]` (Netflix's rule). */
export function openWindow(params: WindowParams, now: number, lastMinRtt?: number): WindowState {
  const span =
    lastMinRtt === undefined
      ? params.minWindow
      : Math.min(Math.max(2 * lastMinRtt, params.minWindow), params.maxWindow);
  return {
    end: now + span,
    count: 0,
    kept: 0,
    sum: 0,
    min: Infinity,
    maxInFlight: 0,
    dropped: false,
    rtts: [],
  };
}

/**
 * Adds one sample. When the sample ends after the window's end and the window holds at least
 * `windowSamples` samples (this one included), the window closes, its summary is returned, and a
 * new one opens at the sample's end.
 *
 * A window still short of samples at its end stays open until it has them. Netflix's
 * `WindowedLimit` discards it instead, and so a limit that has fallen low enough that fewer than
 * 10 requests finish per window (limit 1 at an RTT above 100 ms) is never updated again: it
 * cannot rise back (the "Vegas never recovered" reports). Here it rises, one window per
 * `windowSamples` requests.
 *
 * - A drop counts and marks the window, but records no RTT: a request that failed fast (a refusal
 *   by a downstream, a connection reset) would otherwise read as a very fast request
 *   (Netflix concurrency-limits #176).
 * - A non-drop RTT below `ignoreRttBelow` (or negative: a clock misuse) is ignored altogether.
 */
export function addSample(
  window: WindowState,
  sample: RttSample,
  params: WindowParams,
): { window: WindowState; closed: WindowSummary | undefined } {
  const rtt = sample.end - sample.start;
  let next = window;
  if (sample.dropped) {
    next = {
      ...window,
      count: window.count + 1,
      maxInFlight: Math.max(window.maxInFlight, sample.inFlight),
      dropped: true,
    };
  } else if (rtt >= params.ignoreRttBelow && rtt >= 0) {
    let rtts = window.rtts;
    if (params.percentile !== undefined) {
      if (rtts.length !== window.kept) rtts = rtts.slice(0, window.kept);
      rtts.push(rtt);
    }
    next = {
      ...window,
      rtts,
      count: window.count + 1,
      kept: window.kept + 1,
      sum: window.sum + rtt,
      min: Math.min(window.min, rtt),
      maxInFlight: Math.max(window.maxInFlight, sample.inFlight),
    };
  }
  // A window short of samples at its end stays open until it has them (see above).
  if (!(sample.end > next.end) || next.count < params.windowSamples)
    return { window: next, closed: undefined };
  const minRtt = next.kept > 0 ? next.min : undefined;
  return { window: openWindow(params, sample.end, minRtt), closed: summarize(next, params) };
}

function summarize(window: WindowState, params: WindowParams): WindowSummary {
  let rtt: number | undefined;
  if (window.kept > 0) {
    rtt =
      params.percentile === undefined
        ? window.sum / window.kept
        : percentileOf(window.rtts.slice(0, window.kept), params.percentile);
  }
  return {
    rtt,
    minRtt: window.kept > 0 ? window.min : undefined,
    maxInFlight: window.maxInFlight,
    dropped: window.dropped,
    samples: window.count,
  };
}

/** The nearest-rank percentile: the smallest value with at least `p` of the values at or below it. */
export function percentileOf(values: number[], p: number): number {
  const sorted = values.sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
}

/** Validates the window options against a controller's defaults. */
export function windowParams(
  options: WindowOptions,
  defaults: { windowSamples: number; minWindow: Duration; maxWindow: Duration },
  percentile?: number,
): WindowParams {
  const windowSamples = integerOption('windowSamples', options.windowSamples ?? defaults.windowSamples);
  const minWindow = parseDuration('minWindow', options.minWindow ?? defaults.minWindow);
  const maxWindow = parseDuration(
    'maxWindow',
    options.maxWindow ?? Math.max(minWindow, parseDuration('maxWindow', defaults.maxWindow)),
  );
  if (maxWindow < minWindow) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `maxWindow must be ≥ minWindow (${minWindow} ms); got ${describeValue(options.maxWindow)}`,
      { option: 'maxWindow', value: options.maxWindow },
    );
  }
  const ignoreRttBelow = options.ignoreRttBelow ?? 0.1;
  if (typeof ignoreRttBelow !== 'number' || !Number.isFinite(ignoreRttBelow) || ignoreRttBelow < 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `ignoreRttBelow must be a number of ms ≥ 0; got ${describeValue(ignoreRttBelow)}`,
      { option: 'ignoreRttBelow', value: ignoreRttBelow },
    );
  }
  return { windowSamples, minWindow, maxWindow, ignoreRttBelow, percentile };
}
