import { type Algorithm, type Decision, type RefusalReason, SluiceError } from '@sluice/core';
import { combine, fingerprint, type LimitCall, settleBatch, UNCHANGED } from '@sluice/core/adapter';
import { algorithmOf, specOf } from '../algorithm-spec.js';
import * as resp from '../resp.js';
import type { Command, CommandContext, CommandResult } from './context.js';

/**
 * sluice's own commands, every core algorithm, one or several limits per command:
 *
 *   SL.CHECK  [AT ms] [COMPACT] LIMIT <algorithm> <key> [COST n] [POLICY name] [ID id] [LIMIT ...]
 *   SL.PEEK   (same)          SL.REFUND (same)          SL.RESET LIMIT <algorithm> <key> [ID id] ...
 *
 * `<algorithm>` is `kind:param=value,...` (see algorithm-spec.ts). A check over several limits is
 * all-or-nothing (core's settleBatch). The reply of CHECK and PEEK is the Decision as field/value
 * pairs, its `limits` holding each limit's own decision the same way (what a person reads in
 * redis-cli); with COMPACT, only {@link COMPACT_WIDTH} numbers per limit (what ServerStore reads).
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

/**
 * A COMPACT reply's numbers per limit: reason (0 allowed, then {@link REASON_CODES}' order),
 * remaining, resetAfter, retryAfter, delay. The limit and the policy are left out: the caller sent
 * both (the algorithm's limit, the POLICY or the kind), as RedisStore's scripts leave them out.
 */
export const COMPACT_WIDTH = 5;

/** The refusal reasons of a COMPACT reply, coded 1, 2, 3 (0 is allowed). */
export const REASON_CODES: readonly RefusalReason[] = ['rate-limited', 'cost-exceeds-limit', 'concurrency'];

function stateId(algorithm: Algorithm, extra: string, key: Buffer): string {
  return `sl:${specOf(algorithm)}|${extra}\u0000${key.toString('latin1')}`;
}

function parse(args: readonly Buffer[]): Parsed | resp.Reply {
  let now: number | undefined;
  const calls: ParsedCall[] = [];
  let i = 1;
  const word = (at: number) => args[at]?.toString('latin1').toLowerCase();
  if (word(i) === 'at') {
    now = Number(args[i + 1]?.toString('latin1'));
    if (args[i + 1] === undefined || !Number.isFinite(now) || now < 0) {
      return resp.error('ERR_SLUICE_INVALID_TIME AT must be a finite number of ms since the epoch');
    }
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
    const key = args[i + 2]!;
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

/** Reads every call's state; `waits` collects the commits a reply must not overtake. */
function readAll(
  ctx: CommandContext,
  calls: readonly ParsedCall[],
  serverNow: number,
  waits: Promise<unknown>[],
) {
  return calls.map((call) => {
    const { state, waitFor } = ctx.db.read(call.id, serverNow);
    if (waitFor !== undefined) waits.push(waitFor);
    return state;
  });
}

function durable(reply: resp.Reply, waits: Promise<unknown>[]): CommandResult {
  if (waits.length === 0) return { reply, durable: undefined };
  // 'commit' mode: every wait is the same turn's commit; a reply that waits for it alone lets the
  // connection wait once for all the replies of a read.
  const first = waits[0]!;
  return { reply, durable: waits.every((w) => w === first) ? first : Promise.all(waits) };
}

function check(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  const parsed = parse(args);
  if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) return parsed;
  const serverNow = ctx.now();
  const now = parsed.now ?? serverNow;
  const waits: Promise<unknown>[] = [];
  const states = readAll(ctx, parsed.calls, serverNow, waits);
  const { decisions, writes } = settleBatch(parsed.calls, states, now);
  writes.forEach((write, i) => {
    if (write === UNCHANGED) return;
    const call = parsed.calls[i]!;
    const ttl = write === undefined ? 0 : call.algorithm.ttl(write, now);
    waits.push(ctx.db.write(call.id, write, ttl, serverNow));
  });
  return durable(replyOf(parsed, decisions), waits);
}

function peek(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  const parsed = parse(args);
  if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) return parsed;
  const serverNow = ctx.now();
  const now = parsed.now ?? serverNow;
  const waits: Promise<unknown>[] = [];
  const states = readAll(ctx, parsed.calls, serverNow, waits);
  const decisions = parsed.calls.map((call, i) =>
    call.algorithm.peek(states[i], now, call.cost, call.policy),
  );
  return durable(replyOf(parsed, decisions), waits);
}

function refund(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  const parsed = parse(args);
  if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) return parsed;
  const serverNow = ctx.now();
  const now = parsed.now ?? serverNow;
  const waits: Promise<unknown>[] = [];
  const states = readAll(ctx, parsed.calls, serverNow, waits);
  parsed.calls.forEach((call, i) => {
    const state = states[i];
    if (state === undefined || call.algorithm.refund === undefined) return;
    const next = call.algorithm.refund(state, now, call.cost);
    waits.push(
      ctx.db.write(call.id, next, next === undefined ? 0 : call.algorithm.ttl(next, now), serverNow),
    );
  });
  return durable(resp.OK, waits);
}

function reset(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  const parsed = parse(args);
  if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) return parsed;
  const serverNow = ctx.now();
  const waits = parsed.calls.map((call) => ctx.db.write(call.id, undefined, 0, serverNow));
  return durable(resp.OK, waits);
}

export const sluiceCommands: Record<string, Command> = {
  'sl.check': { arity: [3, -1], run: check },
  'sl.peek': { arity: [3, -1], run: peek },
  'sl.refund': { arity: [3, -1], run: refund },
  'sl.reset': { arity: [3, -1], run: reset },
};

/** The key-id extra a client sends: empty when the fingerprint is the algorithm's own (no bound name). */
export function idOf(algorithm: Algorithm): string {
  return algorithm.fingerprint === fingerprint(algorithm.kind, algorithm.params) ? '' : algorithm.fingerprint;
}
