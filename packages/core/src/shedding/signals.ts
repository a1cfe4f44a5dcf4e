import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions, integerOption } from '../validate.js';
import { eventLoopDelayHistogram, eventLoopUtilization } from './node-event-loop.js';

/**
 * The default utilization signal: the share of time the event loop was busy (not waiting for
 * I/O) since the previous call, 0–1. Called once per sampling interval, that is the utilization
 * over the last interval. Nothing to close. Node only (`performance.eventLoopUtilization()`):
 * elsewhere a coded error (`ERR_SLUICE_UNSUPPORTED`) rather than a signal that never rises.
 */
export function eventLoopUtilizationSignal(): () => number {
  const utilization = eventLoopUtilization();
  let last = utilization();
  return () => {
    const current = utilization();
    const share = utilization(current, last).utilization;
    last = current;
    return share;
  };
}

export interface EventLoopDelayOptions {
  /** The event-loop delay that counts as fully saturated (signal 1): ms or `'100ms'`. @default '100ms' */
  saturated?: Duration;
  /** Which percentile of the delays since the previous call is compared. 1–100. @default 99 */
  percentile?: number;
  /** Sampling resolution of the delay histogram, ms. Integer ≥ 1. @default 10 */
  resolution?: number;
}

/** A signal that owns a resource to give back. */
export interface ClosableSignal {
  (): number;
  /** Stops the underlying monitor. Idempotent. */
  close(): void;
}

const DELAY_KNOWN = [
  'saturated',
  'percentile',
  'resolution',
] as const satisfies readonly (keyof EventLoopDelayOptions)[];

/**
 * A signal from event-loop delay (`monitorEventLoopDelay`): the chosen percentile of the delays
 * seen since the previous call, divided by `saturated`, capped at 1. Reacts to long synchronous
 * work that utilization alone averages away. The caller owns it: `close()` it on shutdown.
 * Node (20.16 and later: `node:perf_hooks` is reached through `process.getBuiltinModule`) and Bun
 * only: elsewhere a coded error (`ERR_SLUICE_UNSUPPORTED`).
 * @example new UtilizationShedder({ signal: eventLoopDelaySignal({ saturated: '200ms' }) })
 */
export function eventLoopDelaySignal(options: EventLoopDelayOptions = {}): ClosableSignal {
  assertKnownOptions('eventLoopDelaySignal', options, DELAY_KNOWN);
  const saturated = parseDuration('saturated', options.saturated ?? '100ms');
  const percentile = options.percentile ?? 99;
  if (typeof percentile !== 'number' || !(percentile > 0 && percentile <= 100)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `percentile must be a number above 0 and at most 100; got ${describeValue(percentile)}`,
      { option: 'percentile', value: percentile },
    );
  }
  const resolution = integerOption('resolution', options.resolution ?? 10);
  const histogram = eventLoopDelayHistogram(resolution);
  histogram.enable();
  const signal = () => {
    const delayMs = histogram.count === 0 ? 0 : histogram.percentile(percentile) / 1e6;
    histogram.reset();
    return Math.min(1, delayMs / saturated);
  };
  signal.close = () => {
    histogram.disable();
  };
  return signal;
}
