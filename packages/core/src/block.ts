import { ceilMs, type Decision, decide, retryMs, withFields } from './decision.js';
import { type Duration, MAX_DURATION, parseDuration } from './duration.js';
import { describeValue, ErrorCode, SluiceError } from './errors.js';
import { assertKnownOptions } from './validate.js';

/**
 * A block after a refusal, with optional escalation for repeat offenders.
 * @example { duration: '1m', factor: 2, max: '1h', decay: '1d' } // 1 min, 2, 4, … up to 1 h
 */
export interface BlockOptions {
  /** How long a key is refused after its limit refused it: ms or `'1m'`. The first block of a streak. */
  duration: Duration;
  /**
   * Each further block of a streak lasts `factor` times the one before (a refusal within `decay`
   * of the end of the last block continues the streak). A number ≥ 1.
   * @default 1 (every block lasts `duration`)
   */
  factor?: number;
  /** The longest block of a streak: ms or `'1h'`. @default '1d' (or `duration` when longer) */
  max?: Duration;
  /**
   * How long the streak is remembered after a block ends: a refusal later than this starts a new
   * streak at `duration`. ms or `'1d'`.
   * @default '1d'
   */
  decay?: Duration;
  /**
   * When a block starts, forget the limit's own state (its count, its log), so the key starts
   * afresh when the block ends, as @nestjs/throttler's storage does. Without it the hits before
   * the block still count afterwards wherever the window outlasts the block.
   * @default false
   */
  reset?: boolean;
}

/** A limit's block, resolved: every time in ms. */
export interface BlockPolicy {
  readonly duration: number;
  readonly factor: number;
  readonly max: number;
  readonly decay: number;
  /** Forget the limit's state when a block starts (`BlockOptions.reset`). */
  readonly reset: boolean;
}

/**
 * A key's block record: `[until, strikes]`, when the current block ends (ms since the epoch) and
 * how many blocks the streak holds. Kept until `until + decay`; gone means no streak.
 */
export type BlockState = readonly [until: number, strikes: number];

const KNOWN = [
  'duration',
  'factor',
  'max',
  'decay',
  'reset',
] as const satisfies readonly (keyof BlockOptions)[];
const DAY = 86_400_000;

/** Reads a limit's `block` option (`'1m'`, or `BlockOptions`); throws a coded error naming `option`. */
export function resolveBlock(option: string, value: Duration | BlockOptions): BlockPolicy {
  if (typeof value !== 'object' || value === null) {
    const duration = parseDuration(option, value);
    return Object.freeze({ duration, factor: 1, max: Math.max(duration, DAY), decay: DAY, reset: false });
  }
  assertKnownOptions(option, value, KNOWN);
  const duration = parseDuration(`${option}.duration`, value.duration);
  const factor = value.factor ?? 1;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > 1000) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option}.factor must be a number from 1 to 1000; got ${describeValue(factor)}`,
      { option: `${option}.factor`, value: factor },
    );
  }
  const max = value.max === undefined ? Math.max(duration, DAY) : parseDuration(`${option}.max`, value.max);
  if (max < duration) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option}.max (${max} ms) must be at least ${option}.duration (${duration} ms)`,
      { option: `${option}.max`, value: value.max },
    );
  }
  const decay = value.decay === undefined ? DAY : parseDuration(`${option}.decay`, value.decay);
  if (max + decay > MAX_DURATION) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option}.max plus ${option}.decay must be at most ${MAX_DURATION} ms`,
      { option: `${option}.decay`, value: value.decay },
    );
  }
  const reset = value.reset ?? false;
  if (typeof reset !== 'boolean') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option}.reset must be true or false; got ${describeValue(reset)}`,
      { option: `${option}.reset`, value: reset },
    );
  }
  return Object.freeze({ duration, factor, max, decay, reset });
}

/** ms left of the block in `state` at `now`; 0 when the key is not blocked. */
export function blockLeft(state: BlockState | undefined, now: number): number {
  return state !== undefined && now < state[0] ? state[0] - now : 0;
}

/**
 * The block a refusal at `now` starts: the streak goes on when the last block ended less than
 * `decay` ago (its record is still there), and each block of a streak is `factor` times the one
 * before, up to `max`. `ttl`: ms to keep the record (the block, then `decay`).
 */
export function startBlock(
  state: BlockState | undefined,
  policy: BlockPolicy,
  now: number,
): { readonly state: BlockState; readonly duration: number; readonly ttl: number } {
  const strikes = state !== undefined && now < state[0] + policy.decay ? state[1] + 1 : 1;
  // Step by step rather than `factor ** (strikes - 1)`: the Lua twin does the same multiplications,
  // so both stores end a block at the same double.
  let duration = policy.duration;
  for (let k = 2; k <= strikes && duration < policy.max && policy.factor !== 1; k++)
    duration *= policy.factor;
  duration = Math.min(policy.max, duration);
  return { state: [now + duration, strikes], duration, ttl: duration + policy.decay };
}

/** The refusal of a blocked key: nothing left until the block ends, reason `'blocked'`. */
export function blockedDecision(limit: number, left: number, policy: string): Decision {
  return decide(false, limit, 0, ceilMs(left), retryMs(left), 0, policy, 'blocked');
}

/**
 * A refusal that started a block of `duration` ms: its retry (and reset) is no sooner than the
 * block's end; with `reset` (the limit's state forgotten), exactly the block's end.
 */
export function blockingDecision(decision: Decision, duration: number, reset = false): Decision {
  return withFields(decision, {
    resetAfter: reset ? ceilMs(duration) : Math.max(decision.resetAfter, ceilMs(duration)),
    retryAfter: reset ? retryMs(duration) : Math.max(decision.retryAfter, retryMs(duration)),
  });
}
