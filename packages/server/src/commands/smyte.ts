import { type Algorithm, tokenBucket } from '@sluice/core';
import { MAX_TIME, type TokenBucketState } from '@sluice/core/adapter';
import { storedId } from '@sluice/host/state';
import { keyTooLong } from '../key-too-long.js';
import * as resp from '../resp.js';
import type { Command, CommandContext, CommandResult } from './context.js';

/**
 * Smyte's RL.REDUCE / RL.GET / RL.PREDUCE / RL.PGET (smyte/ratelimit `RateLimitHandler`), answers,
 * defaults and errors as its code gives them:
 *
 *   RL.REDUCE key max refilltime [REFILL n] [TAKE n] [AT ts] [STRICT]
 *
 * The reply is the number of tokens in the bucket *before* taking (2, 1, 0 for a bucket of 2):
 * the caller is admitted when the reply is ≥ TAKE. A REDUCE that cannot be met still takes what
 * is there (writes max(tokens − take, 0)); STRICT restarts the refill clock at the request's time
 * whenever the bucket is left empty. Refills come in whole refill times (core's stepped token
 * bucket). TAKE 0 and GET write nothing.
 */

// Smyte's error texts (smyte-db pipeline/RedisHandler.h), sent as they are, without an ERR prefix.
const INVALID_INTEGER = resp.error('Value is not an integer or out of range');
const SYNTAX_ERROR = resp.error('Syntax error');

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;

/** A decimal integer in [min, max] (folly::to), or undefined. Beyond ±2^53 is refused too (JS numbers). */
function parseInteger(text: Buffer, min: bigint, max: bigint): number | undefined {
  // Read from the bytes: a sign, then digits (no string, no regular expression per argument).
  const sign = text[0] === 0x2d ? -1 : 1;
  const start = text[0] === 0x2d || text[0] === 0x2b ? 1 : 0;
  if (start === text.length) return undefined;
  let value = 0;
  for (let i = start; i < text.length; i++) {
    const digit = text[i]! - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  // Short enough to be exact as a double and inside the range (9 characters for int32, 15 for
  // int64): skip the BigInt, the common case.
  if (text.length <= 9 || (text.length <= 15 && max > INT32_MAX)) {
    return value === 0 ? 0 : sign * value; // -0 reads as 0, as folly::to gives it
  }
  const big = BigInt(text.toString('latin1'));
  if (big < min || big > max) return undefined;
  return Number.isSafeInteger(Number(big)) ? Number(big) : undefined;
}

interface RlArgs {
  max: number;
  refillMs: number;
  refill: number;
  take: number;
  /** AT, in ms; absent: the server clock read in the transaction. */
  at: number | undefined;
  strict: boolean;
}

/** parseRateLimitArgs: same order of checks, so the same input gets the same error. */
function parseArgs(args: readonly Buffer[], useMs: boolean, isReduce: boolean): RlArgs | resp.Reply {
  const multiplier = useMs ? 1 : 1000;
  const max = parseInteger(args[2]!, INT64_MIN, INT64_MAX);
  if (max === undefined) return INVALID_INTEGER;
  const refillTime = parseInteger(args[3]!, INT32_MIN, INT32_MAX);
  if (refillTime === undefined) return INVALID_INTEGER;
  const parsed: RlArgs = {
    max,
    refillMs: refillTime * multiplier,
    refill: max,
    take: isReduce ? 1 : 0,
    at: undefined,
    strict: false,
  };
  let i = 4;
  while (i < args.length) {
    const option = args[i]!.toString('latin1').toLowerCase();
    if (option === 'strict') {
      parsed.strict = true;
      i++;
      continue;
    }
    if (i + 1 >= args.length) return SYNTAX_ERROR;
    const value = parseInteger(args[i + 1]!, INT64_MIN, INT64_MAX);
    if (value === undefined) return INVALID_INTEGER;
    i += 2;
    if (option === 'refill') parsed.refill = value;
    else if (option === 'take') {
      if (!isReduce) return SYNTAX_ERROR;
      parsed.take = value;
    } else if (option === 'at') {
      parsed.at = value * multiplier;
      // Past core's time limit (2^42 ms) the arithmetic loses units: out of range here.
      if (!Number.isSafeInteger(parsed.at) || parsed.at > MAX_TIME) return INVALID_INTEGER;
    } else return SYNTAX_ERROR;
  }
  if (parsed.max < 1 || parsed.refillMs < 1 || parsed.refill < 1 || parsed.take < 0 || (parsed.at ?? 0) < 0) {
    return INVALID_INTEGER;
  }
  return parsed;
}

/** One parameter set: core's stepped token bucket, and the prefix of its stored keys. */
interface ParamSet {
  readonly bucket: Algorithm<TokenBucketState>;
  /** Smyte's parameters bound into the stored key, so differing parameters never share a bucket. */
  readonly prefix: string;
}

/** Parameter sets, kept for reuse (a service sees few). */
const paramSets = new Map<string, ParamSet>();
/** The set used last, with its numbers: most commands repeat it, and skip building its name. */
let last: { max: number; refill: number; refillMs: number; set: ParamSet } | undefined;
function paramSetFor(max: number, refill: number, refillMs: number): ParamSet {
  if (last !== undefined && last.max === max && last.refill === refill && last.refillMs === refillMs) {
    return last.set;
  }
  const set = lookupParamSet(max, refill, refillMs);
  last = { max, refill, refillMs, set };
  return set;
}

function lookupParamSet(max: number, refill: number, refillMs: number): ParamSet {
  const params = `${max}:${refill}:${refillMs}`;
  let set = paramSets.get(params);
  if (set === undefined) {
    if (paramSets.size >= 10_000) paramSets.clear();
    const bucket = tokenBucket({
      capacity: max,
      refillAmount: refill,
      refillInterval: refillMs,
      refill: 'stepped',
    });
    set = { bucket, prefix: `rl:${params}` };
    paramSets.set(params, set);
  }
  return set;
}

function rateLimit(
  args: readonly Buffer[],
  ctx: CommandContext,
  useMs: boolean,
  isReduce: boolean,
): CommandResult {
  const parsed = parseArgs(args, useMs, isReduce);
  if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) return parsed;
  const tooLong = keyTooLong(args[1]!);
  if (tooLong !== undefined) return tooLong;
  const { max, refill, refillMs, take, strict } = parsed;
  const { bucket, prefix } = paramSetFor(max, refill, refillMs);
  const id = storedId(prefix, args[1]!);
  return ctx.db.enqueue([id], (tx) => {
    const at = parsed.at ?? tx.now;
    const state = tx.read(id, tx.now) as TokenBucketState | undefined;
    // The tokens after whole refills (Smyte's adjustAmount), as core's stepped bucket reports them.
    const tokens = bucket.peek(state, at, 1, 'rl').remaining;
    if (take > 0) {
      // Take what is there, up to TAKE: core's consume of min(take, tokens) (0 keeps the refilled state).
      let next = bucket.consume(state, at, Math.min(take, tokens), 'rl').state as TokenBucketState;
      if (strict && tokens - take <= 0) next = [0, at];
      tx.writeFrom(id, next, bucket.ttl(next, at), at);
    }
    return resp.integer(tokens);
  });
}

// Argument counts after the command name, as Smyte's handler table has them; its own arity text.
const smyte = (min: number, max: number, useMs: boolean, isReduce: boolean): Command => ({
  arity: [min, max],
  arityError: (name) => `Wrong number of arguments for '${name}' command`,
  run: (args, ctx) => rateLimit(args, ctx, useMs, isReduce),
});

export const smyteCommands: Record<string, Command> = {
  'rl.reduce': smyte(3, 10, false, true),
  'rl.get': smyte(3, 8, false, false),
  'rl.preduce': smyte(3, 10, true, true),
  'rl.pget': smyte(3, 8, true, false),
};
