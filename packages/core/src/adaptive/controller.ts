import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { integerOption } from '../validate.js';
import type { RttSample } from './sample-window.js';

/** The controllers sluice ships, declared once. */
export const CONTROLLER_KINDS = ['vegas', 'gradient2', 'aimd', 'envoy-gradient'] as const;
export type ControllerKind = (typeof CONTROLLER_KINDS)[number];

/**
 * A concurrency limit controller as pure functions over a small state: no clock reads, no timers,
 * no randomness of its own. Time comes in with each sample; where a controller jitters (Vegas's
 * probe, Envoy's minRTT interval) it uses `draw`, a uniform number in [0, 1) the caller supplies,
 * so a test replays a run exactly. `AdaptiveConcurrency` owns the state and the in-flight count.
 */
export interface LimitController<S = unknown> {
  readonly kind: ControllerKind;
  readonly minLimit: number;
  readonly maxLimit: number;
  /** The state before any sample, at `now`. */
  start(now: number, draw: number): S;
  /** The state after one finished request. Must not mutate `state`. */
  update(state: S, sample: RttSample, draw: number): S;
  /** The concurrency limit the state allows now: an integer within `[minLimit, maxLimit]`. */
  limit(state: S): number;
  /** The controller's no-load RTT (Vegas's `rtt_noload`, Gradient2's long RTT, Envoy's minRTT), ms; `undefined` before one is known or for a controller without one. */
  rttNoLoad(state: S): number | undefined;
}

/** The bounds every controller takes. */
export interface LimitBounds {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
}

/** Integers with `minLimit ≤ initialLimit ≤ maxLimit`, defaults filled in. */
export function boundsOption(
  options: { initialLimit?: number; minLimit?: number; maxLimit?: number },
  defaults: LimitBounds,
): LimitBounds {
  const minLimit = integerOption('minLimit', options.minLimit ?? defaults.minLimit);
  const maxLimit = integerOption('maxLimit', options.maxLimit ?? Math.max(defaults.maxLimit, minLimit));
  if (maxLimit < minLimit) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `maxLimit must be ≥ minLimit (${minLimit}); got ${describeValue(options.maxLimit)}`,
      { option: 'maxLimit', value: options.maxLimit },
    );
  }
  const initialLimit = integerOption(
    'initialLimit',
    options.initialLimit ?? Math.min(Math.max(defaults.initialLimit, minLimit), maxLimit),
  );
  if (initialLimit < minLimit || initialLimit > maxLimit) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `initialLimit must be from minLimit (${minLimit}) to maxLimit (${maxLimit}); got ${describeValue(initialLimit)}`,
      { option: 'initialLimit', value: initialLimit },
    );
  }
  return { initialLimit, minLimit, maxLimit };
}

/** A finite number within `[min, max]` (`open` excludes the ends it names; `max` may be Infinity). */
export function rangeOption(
  option: string,
  value: unknown,
  min: number,
  max: number,
  open: { min?: boolean; max?: boolean } = {},
): number {
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (open.min ? value > min : value >= min) &&
    (open.max ? value < max : value <= max);
  if (!ok) {
    const range =
      max === Number.POSITIVE_INFINITY
        ? `${open.min ? '>' : '≥'} ${min}`
        : `in ${open.min ? '(' : '['}${min}, ${max}${open.max ? ')' : ']'}`;
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a number ${range}; got ${describeValue(value)}`,
      { option, value },
    );
  }
  return value as number;
}

/** `value` within `[min, max]`. */
export function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(value, min), max);
}
