import { nameOption } from '../concurrency/common-options.js';
import { type Decision, decide } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions, booleanOption, functionOption } from '../validate.js';
import { DEFAULT_PRIORITIES, lookupPriority, prioritiesOption, priorityIndex } from './priorities.js';
import { type ResolvedRetryRange, type RetryRange, retryHint, retryRangeOption } from './retry-hint.js';
import { eventLoopUtilizationSignal } from './signals.js';
import {
  type ControllerParams,
  type ControllerState,
  controlStep,
  dropProbabilities,
  restingState,
} from './utilization-controller.js';

export interface UtilizationShedderOptions {
  /**
   * Priority names, most important first. The first is never shed; the others are shed least
   * important first.
   * @default ['critical', 'normal', 'low']
   */
  priorities?: readonly string[];
  /**
   * The utilization signal, read once per sampling interval: a number from 0 (idle) to 1
   * (saturated). Anything else holds the controller where it is.
   * @default the event loop utilization over the last interval (`eventLoopUtilizationSignal()`)
   */
  signal?: () => number;
  /** Sampling interval: ms or `'1s'`… @default '1s' */
  interval?: Duration;
  /** Utilization below which pressure drains. In (0, bad]. @default 0.7 */
  good?: number;
  /** Utilization at or above which pressure builds. In [good, 1]. @default 0.8 */
  bad?: number;
  /** How long overload must last before anything is shed: ms, `'28s'`, or 0. @default '28s' */
  delay?: Duration | 0;
  /** Overload time, after `delay`, to go from shedding nothing to shedding every sheddable priority. @default '120s' */
  ramp?: Duration;
  /** Good-utilization time to go from shedding every sheddable priority back to nothing. @default the `ramp` */
  recovery?: Duration;
  /** The range a shed request's `retryAfter` is drawn from. @default { min: '1s', max: '5s' } */
  retryAfter?: RetryRange;
  /** Uniform draws in [0, 1): one per request of a priority being shed. @default Math.random */
  random?: () => number;
  /** A monotonic clock in ms, for the timer's samples. @default performance.now */
  clock?: () => number;
  /**
   * Sample on an `unref`'d timer every `interval`. `false`: call `sample()` yourself (tests, or a
   * host with its own metrics loop).
   * @default true
   */
  timer?: boolean;
  /** Shown in `decision.policy`. @default 'utilization' */
  name?: string;
  /** Told when the signal throws (the step then holds). @default none */
  onError?: (error: unknown) => void;
}

const KNOWN = [
  'priorities',
  'signal',
  'interval',
  'good',
  'bad',
  'delay',
  'ramp',
  'recovery',
  'retryAfter',
  'random',
  'clock',
  'timer',
  'name',
  'onError',
] as const satisfies readonly (keyof UtilizationShedderOptions)[];

/**
 * Stripe's worker utilization load shedder: the last resort when this process is overloaded.
 * Once utilization has stayed bad for `delay`, it drops the least important requests with a
 * probability that rises linearly over `ramp`, then the next priority's; it recovers as slowly,
 * and holds inside the dead zone between `good` and `bad` (the control law is in
 * `utilization-controller.ts`). The most important priority is never shed. Refusals have reason
 * `'shed'` (HTTP 503) and a jittered `retryAfter`. Per request: one array read and, while its
 * priority is being shed, one random draw.
 * @example
 * const shedder = new UtilizationShedder();
 * const decision = shedder.check(isPayment(req) ? 'critical' : 'low');
 * if (!decision.allowed) return reply503(decision);
 * process.on('SIGTERM', () => shedder.close());
 */
export class UtilizationShedder {
  readonly priorities: readonly string[];
  readonly params: ControllerParams;
  /** ms. */
  readonly interval: number;
  readonly name: string;
  private readonly signal: () => number;
  private readonly index: ReadonlyMap<string, number>;
  private readonly retryRange: ResolvedRetryRange;
  private readonly random: () => number;
  private readonly clock: () => number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly allowed: Decision;
  private current: ControllerState;
  private probabilities: number[];
  private last: number | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: UtilizationShedderOptions = {}) {
    assertKnownOptions('UtilizationShedder', options, KNOWN);
    this.priorities = prioritiesOption(options.priorities ?? DEFAULT_PRIORITIES, 2);
    this.signal = functionOption('signal', options.signal) ?? eventLoopUtilizationSignal();
    this.interval = parseDuration('interval', options.interval ?? '1s');
    const good = shareOption('good', options.good ?? 0.7);
    const bad = shareOption('bad', options.bad ?? 0.8);
    if (good === 0 || good > bad) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `good must be above 0 and at most bad (${bad}); got ${describeValue(options.good ?? good)}`,
        { option: 'good', value: good },
      );
    }
    const delay = options.delay === 0 ? 0 : parseDuration('delay', options.delay ?? '28s');
    const ramp = parseDuration('ramp', options.ramp ?? '120s');
    const recovery = options.recovery === undefined ? ramp : parseDuration('recovery', options.recovery);
    this.params = Object.freeze({
      good,
      bad,
      delay,
      ramp,
      recovery,
      // A stalled sampler credits at most the delay: from rest, one late sample cannot start shedding.
      maxStep: Math.max(delay, this.interval),
      sheddable: this.priorities.length - 1,
    });
    this.retryRange = retryRangeOption(options.retryAfter);
    this.random = functionOption('random', options.random) ?? Math.random;
    this.clock = functionOption('clock', options.clock) ?? (() => performance.now());
    this.name = nameOption(options.name ?? 'utilization');
    this.onError = functionOption('onError', options.onError);
    this.index = priorityIndex(this.priorities);
    this.allowed = Object.freeze(decide(true, 0, 0, 0, 0, 0, this.name, undefined));
    this.current = restingState(this.params, this.clock());
    this.probabilities = dropProbabilities(this.current, this.params);
    if (booleanOption('timer', options.timer ?? true)) {
      this.timer = setInterval(() => this.sample(), this.interval);
      // Node's and Bun's timers can be unref'd (the process may exit); Deno's and Workers' are numbers.
      (this.timer as { unref?: () => void }).unref?.();
    }
  }

  /**
   * Admits or sheds one request of this priority. Allowed decisions carry no quota (`limit` 0):
   * a shedder protects the service, it is not a client's allowance.
   */
  check(priority: string): Decision {
    const p = this.probabilities[lookupPriority(this.index, this.priorities, priority)]!;
    if (p === 0) return this.allowed;
    const draw = this.random();
    if (!(draw < p)) return this.allowed;
    // Given draw < p, draw / p is again uniform in [0, 1): the jitter needs no second draw.
    const retryAfter = retryHint(this.retryRange, draw / p);
    return decide(false, 0, 0, 0, retryAfter, 0, this.name, 'shed');
  }

  /** Reads the signal and takes one control step (the timer calls this every `interval`). */
  sample(now: number = this.clock()): void {
    let signal: number;
    try {
      signal = this.signal();
    } catch (error) {
      signal = Number.NaN;
      try {
        this.onError?.(error);
      } catch {
        // The timer must survive a throwing hook.
      }
    }
    this.last = typeof signal === 'number' ? signal : Number.NaN;
    this.current = controlStep(this.current, this.last, now, this.params);
    this.probabilities = dropProbabilities(this.current, this.params);
  }

  /** The probability that a request of this priority is shed now, 0–1. */
  fraction(priority: string): number {
    return this.probabilities[lookupPriority(this.index, this.priorities, priority)]!;
  }

  /** Every priority's shed probability now. */
  fractions(): Record<string, number> {
    const out: Record<string, number> = {};
    this.priorities.forEach((name, i) => {
      out[name] = this.probabilities[i]!;
    });
    return out;
  }

  /** The controller's state (for metrics: `pressure` > 0 means shedding). */
  get state(): ControllerState {
    return this.current;
  }

  /** The last signal read, `undefined` before the first sample (NaN when it failed). */
  get lastSignal(): number | undefined {
    return this.last;
  }

  /** Stops the sampling timer. Idempotent; `check` keeps answering with the last level. */
  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}

function shareOption(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a utilization from 0 to 1; got ${describeValue(value)}`,
      { option, value },
    );
  }
  return value;
}
