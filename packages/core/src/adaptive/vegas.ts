import { assertKnownOptions, integerOption } from '../validate.js';
import { boundsOption, clamp, type LimitController, rangeOption } from './controller.js';
import { log10Root } from './log10-root.js';
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

export interface VegasOptions extends WindowOptions {
  /** The limit before any sample. Integer in `[minLimit, maxLimit]`. @default 20 */
  initialLimit?: number;
  /** The limit never goes below it. Integer ≥ 1. @default 1 */
  minLimit?: number;
  /** The limit never goes above it (Netflix's `maxConcurrency`). @default 1000 */
  maxLimit?: number;
  /** Weight of the new estimate: `limit = (1 − s) · limit + s · new`. In (0, 1]. @default 1 */
  smoothing?: number;
  /** The no-load RTT is probed again every `probeMultiplier × limit` windows, jittered ×[0.5, 1). Integer ≥ 1. @default 30 */
  probeMultiplier?: number;
  /**
   * The no-load RTT never goes below this, ms (Netflix concurrency-limits #165): a burst of
   * cache hits or trivially cheap requests would otherwise set a no-load RTT the real work never
   * reaches, and every later window would read as a deep queue.
   * @default 0.1 (the smallest RTT recorded at all, `ignoreRttBelow`'s default)
   */
  rttNoLoadFloor?: number;
}

const KNOWN = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'smoothing',
  'probeMultiplier',
  'rttNoLoadFloor',
  'windowSamples',
  'minWindow',
  'maxWindow',
  'ignoreRttBelow',
] as const satisfies readonly (keyof VegasOptions)[];

export interface VegasParams {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly smoothing: number;
  readonly probeMultiplier: number;
  readonly rttNoLoadFloor: number;
  readonly window: WindowParams;
}

export interface VegasState {
  /** The estimated limit, fractional (the limit in force is its integer part). */
  readonly estimate: number;
  /** ms; 0 before the first window. */
  readonly rttNoLoad: number;
  /** Windows since the last probe. */
  readonly probeCount: number;
  /** In [0.5, 1): this probe period's jitter. */
  readonly probeJitter: number;
  /** Whether the last window cut the limit for a deep queue (see `vegasUpdate`, step 5). */
  readonly drained: boolean;
  readonly window: WindowState;
}

export function vegasParams(options: VegasOptions = {}): VegasParams {
  assertKnownOptions('vegas', options, KNOWN);
  const bounds = boundsOption(options, { initialLimit: 20, minLimit: 1, maxLimit: 1000 });
  return Object.freeze({
    ...bounds,
    smoothing: rangeOption('smoothing', options.smoothing ?? 1, 0, 1, { min: true }),
    probeMultiplier: integerOption('probeMultiplier', options.probeMultiplier ?? 30),
    rttNoLoadFloor: rangeOption('rttNoLoadFloor', options.rttNoLoadFloor ?? 0.1, 0, Number.POSITIVE_INFINITY),
    window: windowParams(options, { windowSamples: 10, minWindow: '1s', maxWindow: '1s' }),
  });
}

export function vegasStart(params: VegasParams, now: number, draw: number): VegasState {
  return {
    estimate: params.initialLimit,
    rttNoLoad: 0,
    probeCount: 0,
    probeJitter: jitter(draw),
    drained: false,
    window: openWindow(params.window, now),
  };
}

/** Netflix's `ThreadLocalRandom.nextDouble(0.5, 1)`, from the caller's draw. */
function jitter(draw: number): number {
  return 0.5 + 0.5 * draw;
}

/**
 * One closed window, as Netflix concurrency-limits' `VegasLimit._update` (TCP Vegas applied to
 * concurrency). With `L = log10Root(⌊limit⌋)` and `rtt` the window's mean RTT:
 *
 * 1. A window of drops only (no RTT, see `addSample`): `new = limit − L`.
 * 2. `probeCount += 1`; when `probeJitter × probeMultiplier × limit ≤ probeCount`, probe: the
 *    no-load RTT becomes this window's RTT (it may have risen for good: a slower database), a new
 *    jitter is drawn, the count restarts, the limit holds.
 * 3. When there is no no-load RTT yet, or `rtt` is below it, it becomes `rtt`; the limit holds.
 * 4. `queue = ⌈limit × (1 − rttNoLoad / rtt)⌉`, the requests waiting rather than being served.
 *    When the last window cut the limit for a deep queue (5.) and `queue` is still above `beta`,
 *    the cut did not drain it: the service itself slowed, and the no-load RTT is probed at once
 *    (as in 2.). Not Netflix's: its stale no-load RTT reads a service twice as slow as a queue
 *    of half the limit, and holds the limit at ~2 × beta until the next probe, minutes away.
 * 5. A drop in the window: `new = limit − L`. Otherwise, while `2 × maxInFlight < limit` (the
 *    application does not use the limit), the limit holds. Otherwise, with `alpha = 3L`,
 *    `beta = 6L`, `threshold = L`:
 *    `queue ≤ threshold` → `limit + beta`; `queue < alpha` → `limit + L`;
 *    `queue > beta` → `limit − max(L, queue − beta)`; else the limit holds.
 *    The deep-queue step is not Netflix's `limit − L`: it takes out the whole excess the queue
 *    estimate sees, in one window. Netflix's Vegas (unwindowed, its default) steps per request;
 *    over 1 s windows, `−L` a window took 14 s to absorb a downstream halving at limit 26.
 * 6. `new` is clamped to `[minLimit, maxLimit]`, then `limit = (1 − smoothing) · limit + smoothing · new`.
 *
 * Every RTT goes through `max(rttNoLoadFloor, rtt)` first (the floor, #165).
 */
export function vegasUpdate(
  state: VegasState,
  summary: WindowSummary,
  params: VegasParams,
  draw: number,
): VegasState {
  const limit = state.estimate;
  const L = log10Root(limit);
  if (summary.rtt === undefined) {
    return summary.dropped ? { ...state, estimate: next(limit, limit - L, params) } : state;
  }
  const rtt = Math.max(params.rttNoLoadFloor, summary.rtt);
  const probeCount = state.probeCount + 1;
  if (state.probeJitter * params.probeMultiplier * limit <= probeCount) {
    return { ...state, rttNoLoad: rtt, probeCount: 0, probeJitter: jitter(draw) };
  }
  if (state.rttNoLoad === 0 || rtt < state.rttNoLoad) return { ...state, rttNoLoad: rtt, probeCount };
  const queue = Math.ceil(limit * (1 - state.rttNoLoad / rtt));
  if (state.drained && !summary.dropped && queue > 6 * L) {
    // The last window cut the limit by the whole excess and the queue did not drain: no queue
    // stands behind this RTT, the service itself slowed. Probe now rather than in minutes.
    return { ...state, rttNoLoad: rtt, probeCount: 0, probeJitter: jitter(draw), drained: false };
  }
  let target: number;
  if (summary.dropped) target = limit - L;
  else if (summary.maxInFlight * 2 < limit) return { ...state, probeCount };
  else if (queue <= L) target = limit + 6 * L;
  else if (queue < 3 * L) target = limit + L;
  else if (queue > 6 * L) target = limit - Math.max(L, queue - 6 * L);
  else return { ...state, probeCount, drained: false };
  const drained = !summary.dropped && queue > 6 * L;
  return { ...state, probeCount, estimate: next(limit, target, params), drained };
}

function next(limit: number, target: number, params: VegasParams): number {
  const bounded = clamp(target, params.minLimit, params.maxLimit);
  return (1 - params.smoothing) * limit + params.smoothing * bounded;
}

/**
 * Netflix concurrency-limits' Vegas limit (`VegasLimit`, its default), over windows of at least
 * 10 samples lasting 1 s (`WindowedLimit`'s defaults). See `vegasUpdate` for the formula.
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: vegas({ maxLimit: 4000 }) });
 */
export function vegas(options: VegasOptions = {}): LimitController<VegasState> {
  const params = vegasParams(options);
  return Object.freeze({
    kind: 'vegas' as const,
    minLimit: params.minLimit,
    maxLimit: params.maxLimit,
    params,
    start: (now: number, draw: number) => vegasStart(params, now, draw),
    update(state: VegasState, sample: RttSample, draw: number): VegasState {
      const { window, closed } = addSample(state.window, sample, params.window);
      const moved = { ...state, window };
      return closed === undefined ? moved : vegasUpdate(moved, closed, params, draw);
    },
    limit: (state: VegasState) => clamp(Math.trunc(state.estimate), params.minLimit, params.maxLimit),
    rttNoLoad: (state: VegasState) => (state.rttNoLoad === 0 ? undefined : state.rttNoLoad),
  });
}
