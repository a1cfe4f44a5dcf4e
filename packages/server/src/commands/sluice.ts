import type { LimitCall } from '@sluice/core';
import { type Algorithm, type Decision, ErrorCode, SluiceError } from '@sluice/core';
import { combine } from '@sluice/core/adapter';
import {
  chargeIn,
  checkIn,
  peekIn,
  refundIn,
  resetIn,
  type StateBatch,
  type StateWriter,
  storedId,
} from '@sluice/host/state';
import { algorithmOf, specOf } from '../algorithm-spec.js';
import { keyTooLong } from '../key-too-long.js';
import * as resp from '../resp.js';
import { REASON_CODES } from '../store-wire.js';
import { timeError } from '../time-arg.js';
import type { Command, CommandContext, CommandResult } from './context.js';

/**
 * sluice's own commands, every core algorithm, one or several limits per command:
 *
 *   SL.CHECK  [AT ms] [COMPACT] LIMIT <algorithm> <key> [COST n] [POLICY name] [ID id] [LIMIT ...]
 *   SL.PEEK   (same)          SL.REFUND (same)          SL.RESET LIMIT <algorithm> <key> [ID id] ...
 *   SL.CHARGE (same): takes up to COST from each limit, as much as it has left (core's
 *             chargeStep), never below zero; replies with the units each limit took.
 *
 * `<algorithm>` is `kind:param=value,...` (see algorithm-spec.ts). A check over several limits is
 * all-or-nothing (core's batchStep). The reply of CHECK and PEEK is the Decision as field/value
 * pairs, its `limits` holding each limit's own decision the same way (what a person reads in
 * redis-cli); with COMPACT, only `COMPACT_WIDTH` numbers per limit (store-wire.ts: what ServerStore reads).
 */

interface ParsedCall extends LimitCall {
  /** The stored key: the algorithm with all its parameters, the caller's id, the key's bytes. */
  readonly id: string;
}

interface Parsed {
  readonly now: number | undefined;
  readonly compact: boolean;
  readonly calls: ParsedCall[];
}

/** The stored key: the algorithm with all its parameters and the caller's id, then the key. */
function stateId(algorithm: Algorithm, extra: string, key: Buffer): string {
  return storedId(`sl:${specOf(algorithm)}|${extra}`, key);
}

/**
 * The server's bound on one key's cost: a sliding window log holds up to `limit` entries and every
 * check reads them all, so its `limit` is capped (`maxLogEntries`). The other kinds cost the same
 * whatever their parameters, up to core's own bounds (a counter's `precision` ≤ 1000).
 */
function tooCostly(algorithm: Algorithm, ctx: CommandContext): resp.Reply | undefined {
  if (algorithm.kind !== 'sliding-window-log' || algorithm.limit <= ctx.maxLogEntries) return undefined;
  return resp.error(
    `${ErrorCode.INVALID_OPTION} sliding-window-log limit must be at most ${ctx.maxLogEntries} on this server (maxLogEntries): each check reads the whole log, up to limit entries, where sliding-window-counter costs the same at any limit; got ${algorithm.limit}`,
  );
}

function parse(args: readonly Buffer[], ctx: CommandContext): Parsed | resp.Reply {
  let now: number | undefined;
  const calls: ParsedCall[] = [];
  let i = 1;
  const word = (at: number) => args[at]?.toString('latin1').toLowerCase();
  if (word(i) === 'at') {
    const text = args[i + 1]?.toString('latin1');
    now = Number(text);
    const invalid = timeError(text, now);
    if (invalid !== undefined) return invalid;
    i += 2;
  }
  const compact = word(i) === 'compact';
  if (compact) i++;
  while (i < args.length) {
    if (word(i) !== 'limit' || i + 2 >= args.length) {
      return resp.error('ERR syntax error: expected LIMIT <algorithm> <key> [COST n] [POLICY name] [ID id]');
    }
    let algorithm: Algorithm;
    try {
      algorithm = algorithmOf(args[i + 1]!.toString());
    } catch (err) {
      if (err instanceof SluiceError) return resp.error(`${err.code} ${err.message}`);
      throw err;
    }
    const costly = tooCostly(algorithm, ctx);
    if (costly !== undefined) return costly;
    const key = args[i + 2]!;
    const tooLong = keyTooLong(key);
    if (tooLong !== undefined) return tooLong;
    i += 3;
    let cost = 1;
    let policy: string = algorithm.kind;
    let extra = '';
    for (
      let option = word(i);
      option === 'cost' || option === 'policy' || option === 'id';
      option = word(i)
    ) {
      const value = args[i + 1];
      if (value === undefined) return resp.error(`ERR syntax error: ${option.toUpperCase()} needs a value`);
      if (option === 'cost') {
        cost = Number(value.toString('latin1'));
        if (!Number.isSafeInteger(cost) || cost < 1) {
          return resp.error('ERR_SLUICE_INVALID_COST COST must be an integer ≥ 1');
        }
      } else if (option === 'policy') policy = value.toString();
      else extra = value.toString();
      i += 2;
    }
    calls.push({ algorithm, key: key.toString('latin1'), cost, policy, id: stateId(algorithm, extra, key) });
  }
  if (calls.length === 0) return resp.error('ERR syntax error: at least one LIMIT is needed');
  return { now, compact, calls };
}

function number(value: number): resp.Reply {
  return Number.isInteger(value) ? resp.integer(value) : resp.bulk(String(value));
}

function fieldsOf(d: Decision): resp.Reply[] {
  return [
    resp.bulk('allowed'),
    resp.integer(d.allowed ? 1 : 0),
    resp.bulk('limit'),
    number(d.limit),
    resp.bulk('remaining'),
    number(d.remaining),
    resp.bulk('resetAfter'),
    number(d.resetAfter),
    resp.bulk('retryAfter'),
    number(d.retryAfter),
    resp.bulk('delay'),
    number(d.delay),
    resp.bulk('policy'),
    resp.bulk(d.policy),
    resp.bulk('reason'),
    d.reason === undefined ? resp.NIL : resp.bulk(d.reason),
  ];
}

export function decisionReply(perLimit: readonly Decision[]): resp.Reply {
  const combined = combine(perLimit);
  return resp.array([
    ...fieldsOf(combined),
    resp.bulk('limits'),
    resp.array(perLimit.map((d) => resp.array(fieldsOf(d)))),
  ]);
}

function compactReply(perLimit: readonly Decision[]): resp.Reply {
  const items: resp.Reply[] = [];
  for (const d of perLimit) {
    const reason = d.reason === undefined ? 0 : REASON_CODES.indexOf(d.reason) + 1;
    items.push(
      resp.integer(reason),
      number(d.remaining),
      number(d.resetAfter),
      number(d.retryAfter),
      number(d.delay),
    );
  }
  return resp.array(items);
}

/** The reply of CHECK and PEEK, in the form the command asked for. */
function replyOf(parsed: Parsed, decisions: readonly Decision[]): resp.Reply {
  return parsed.compact ? compactReply(decisions) : decisionReply(decisions);
}

/**
 * The parts of a parsed command a step runs on: its calls, their stored keys, their time (`now`:
 * AT, or the server clock read in the transaction; `storeNow`: that clock, for expiry).
 */
interface Step extends StateBatch {
  readonly calls: readonly ParsedCall[];
}

/**
 * One command over the calls' states: parses (a bad command is answered at once, without joining
 * the turn's transaction), then queues a job that runs `body` in the turn's transaction (the
 * shared steps of `@sluice/host/state`) and replies with what it answers.
 */
function overStates(
  args: readonly Buffer[],
  ctx: CommandContext,
  body: (tx: StateWriter, step: Step, parsed: Parsed) => resp.Reply,
): CommandResult {
  const parsed = parse(args, ctx);
  if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) return parsed;
  const calls = parsed.calls;
  const ids = calls.map((call) => call.id);
  return ctx.db.enqueue(ids, (tx) =>
    body(tx, { calls, ids, now: parsed.now ?? tx.now, storeNow: tx.now }, parsed),
  );
}

function check(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  return overStates(args, ctx, (tx, step, parsed) => replyOf(parsed, checkIn(tx, step)));
}

function peek(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  return overStates(args, ctx, (tx, step, parsed) => replyOf(parsed, peekIn(tx, step)));
}

function refund(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  return overStates(args, ctx, (tx, step) => {
    refundIn(tx, step);
    return resp.OK;
  });
}

function charge(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  return overStates(args, ctx, (tx, step) =>
    resp.array(chargeIn(tx, step).map((taken) => resp.integer(taken))),
  );
}

function reset(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  return overStates(args, ctx, (tx, { ids, storeNow }) => {
    resetIn(tx, ids, storeNow);
    return resp.OK;
  });
}

export const sluiceCommands: Record<string, Command> = {
  'sl.check': { arity: [3, -1], run: check },
  'sl.peek': { arity: [3, -1], run: peek },
  'sl.refund': { arity: [3, -1], run: refund },
  'sl.charge': { arity: [3, -1], run: charge },
  'sl.reset': { arity: [3, -1], run: reset },
};
