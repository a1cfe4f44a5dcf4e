import {
  type Algorithm,
  type Decision,
  ErrorCode,
  type LimitCall,
  type RefusalReason,
  SluiceError,
} from '@sluice/core';
import { decide } from '@sluice/core/adapter';
import { LUA_ALGORITHMS, type LuaAlgorithm } from './lua/algorithms.js';

const ARGS = new WeakMap<Algorithm, readonly string[]>();

/**
 * Per-decision reply width: reason (0 allowed, 1 rate-limited, 2 cost-exceeds-limit, 3 blocked), remaining,
 * resetAfter, retryAfter, delay. `allowed` is `reason === 0` and `limit` is the algorithm's own
 * (every Lua twin decides with it): every element of a reply costs Redis time to write.
 */
export const DECISION_WIDTH = 5;

const REASONS: readonly (RefusalReason | undefined)[] = [
  undefined,
  'rate-limited',
  'cost-exceeds-limit',
  'blocked',
];

/**
 * An algorithm's ARGV group without the cost: `[code, field, ...params]`, its field in the hash of
 * a user key (its fingerprint), params as exact decimal strings (`String` of a double round-trips).
 * Cached per algorithm object.
 */
export function algorithmArgs(algorithm: Algorithm): readonly string[] {
  const cached = ARGS.get(algorithm);
  if (cached !== undefined) return cached;
  const index = LUA_ALGORITHMS.findIndex(
    (entry) => entry.kind === algorithm.kind && (entry.matches?.(algorithm.params) ?? true),
  );
  const known = index < 0 ? undefined : { code: String(index + 1), entry: LUA_ALGORITHMS[index]! };
  if (known === undefined) {
    throw new SluiceError(
      ErrorCode.UNSUPPORTED,
      `RedisStore has no Lua twin for the algorithm kind ${JSON.stringify(algorithm.kind)}; supported: ${[...new Set(LUA_ALGORITHMS.map((a) => a.kind))].join(', ')}`,
      { option: 'algorithm', value: algorithm.kind },
    );
  }
  const args = [known.code, algorithm.fingerprint];
  for (const name of known.entry.params) {
    const value = algorithm.params[name];
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `RedisStore: ${algorithm.kind} param ${name} must be a finite number; got ${String(value)}`,
        { option: `params.${name}`, value },
      );
    }
    args.push(String(value));
  }
  ARGS.set(algorithm, args);
  return args;
}

/** The Lua fragment of `algorithm` and its code (1-based position in `LUA_ALGORITHMS`). */
export function luaAlgorithm(algorithm: Algorithm): { readonly code: number; readonly entry: LuaAlgorithm } {
  const code = Number(algorithmArgs(algorithm)[0]);
  return { code, entry: LUA_ALGORITHMS[code - 1]! };
}

/** Appends one call's ARGV group: code, cost, field, params. */
export function pushCallArgs(args: (string | number)[], call: LimitCall): void {
  const group = algorithmArgs(call.algorithm);
  args.push(group[0]!, call.cost);
  for (let i = 1; i < group.length; i++) args.push(group[i]!);
}

/**
 * Reads the decision of `call` from a script reply at `offset` ({@link DECISION_WIDTH} integers;
 * a single-limit reply leaves out a zero delay, its last element).
 */
export function readDecision(reply: readonly unknown[], offset: number, call: LimitCall): Decision {
  const reason = reply[offset] as number;
  return decide(
    reason === 0,
    call.algorithm.limit,
    reply[offset + 1] as number,
    reply[offset + 2] as number,
    reply[offset + 3] as number,
    (reply[offset + 4] as number | undefined) ?? 0,
    call.policy,
    REASONS[reason],
  );
}

/**
 * Reads the reply of a single-limit script: the list {@link readDecision} reads, or, for an
 * admission without delay, one integer `resetAfter * (limit + 1) + remaining`
 * (Redis writes a table reply with a deferred length, ~0.5 µs of its time per call). Exact: the
 * script packs only whole numbers with `remaining ≤ limit` and a result below 2^53.
 */
export function readSingleDecision(reply: number | readonly unknown[], call: LimitCall): Decision {
  if (typeof reply !== 'number') return readDecision(reply, 0, call);
  const base = call.algorithm.limit + 1;
  return decide(
    true,
    call.algorithm.limit,
    reply % base,
    Math.floor(reply / base),
    0,
    0,
    call.policy,
    undefined,
  );
}

/**
 * Reads a batch reply: per call, {@link DECISION_WIDTH} integers after the leading `now`, or, from a
 * lean batch script whose every limit admitted without delay, one packed integer per call (see
 * {@link readSingleDecision}): a reply of exactly `calls.length` elements.
 */
export function readBatchDecisions(reply: readonly unknown[], calls: readonly LimitCall[]): Decision[] {
  const decisions = new Array<Decision>(calls.length);
  if (reply.length === calls.length) {
    for (let i = 0; i < calls.length; i++) decisions[i] = readSingleDecision(reply[i] as number, calls[i]!);
  } else {
    for (let i = 0; i < calls.length; i++)
      decisions[i] = readDecision(reply, 1 + i * DECISION_WIDTH, calls[i]!);
  }
  return decisions;
}

/**
 * ARGV of the batch script after the keys: `time` (see `nowArg`), mode, the calls' options
 * (shadow, block: see `batchScript`), then each call's group.
 */
export function callArgs(calls: readonly LimitCall[], time: string, mode: string): (string | number)[] {
  const args: (string | number)[] = [time, mode, 0];
  for (let i = 0; i < calls.length; i++) {
    const { shadow, block } = calls[i]!;
    if (shadow !== true && block === undefined) continue;
    args[2] = (args[2] as number) + 1;
    args.push(i + 1, shadow === true ? 1 : 0);
    if (block === undefined) args.push(0, 0, 0, 0, 0);
    else
      args.push(
        String(block.duration),
        String(block.factor),
        String(block.max),
        String(block.decay),
        block.reset ? 1 : 0,
      );
  }
  for (const call of calls) pushCallArgs(args, call);
  return args;
}

/**
 * The field of a limit's block record (`LimitCall.block`) in the hash of its user key: the
 * limit's own field and `:b` (the batch script makes the same name: `lua/block.ts`).
 */
export function blockField(field: string): string {
  return `${field}:b`;
}
