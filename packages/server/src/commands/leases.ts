import { MemoryLeases } from '@sluice/core/adapter';
import * as resp from '../resp.js';
import type { Command, CommandContext, CommandResult } from './context.js';
import { decisionReply } from './sluice.js';

/**
 * Concurrency leases (the concurrency limiter and the fleet shedder), held by core's MemoryLeases
 * in the server's memory: a lease lives for one request (seconds), so it is not written to disk; a
 * restart forgets the leases in flight, as a Redis without persistence would.
 *
 *   SL.LEASE ACQUIRE|PEEK space key id limit ttl retryAfter policy [AT ms]
 *   SL.LEASE RELEASE space key id [AT ms]      SL.LEASE RESET space key
 */
const leasesOf = new WeakMap<object, MemoryLeases>();

function leases(ctx: CommandContext): MemoryLeases {
  let held = leasesOf.get(ctx.db);
  if (held === undefined) {
    // At most a million lease sets (keys with requests in flight) in memory, as MemoryStore bounds its own.
    held = new MemoryLeases(1_000_000, ctx.now);
    leasesOf.set(ctx.db, held);
  }
  return held;
}

const text = (b: Buffer | undefined) => (b === undefined ? '' : b.toString('latin1'));

function positive(b: Buffer | undefined): number | undefined {
  const n = Number(text(b));
  return b !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
}

function at(args: readonly Buffer[], index: number): number | undefined | false {
  if (args.length <= index) return undefined;
  if (text(args[index]).toLowerCase() !== 'at' || args.length !== index + 2) return false;
  const now = Number(text(args[index + 1]));
  return Number.isFinite(now) ? now : false;
}

function lease(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  const sub = text(args[1]).toLowerCase();
  const set = { space: text(args[2]), key: text(args[3]) };
  if ((sub === 'acquire' || sub === 'peek') && args.length >= 9) {
    const limit = positive(args[5]);
    const ttl = positive(args[6]);
    const retryAfter = positive(args[7]);
    const now = at(args, 9);
    if (
      limit === undefined ||
      !Number.isSafeInteger(limit) ||
      ttl === undefined ||
      retryAfter === undefined ||
      now === false
    ) {
      return resp.error(
        'ERR syntax error: SL.LEASE ACQUIRE|PEEK space key id limit ttl retryAfter policy [AT ms]',
      );
    }
    const call = { ...set, id: text(args[4]), limit, ttl, retryAfter, policy: args[8]!.toString() };
    const decision = sub === 'acquire' ? leases(ctx).acquire(call, now) : leases(ctx).peek(call, now);
    return decisionReply([decision]);
  }
  if (sub === 'release' && args.length >= 5) {
    const now = at(args, 5);
    if (now === false) return resp.error('ERR syntax error: SL.LEASE RELEASE space key id [AT ms]');
    return resp.integer(leases(ctx).release({ ...set, id: text(args[4]) }, now) ? 1 : 0);
  }
  if (sub === 'reset' && args.length === 4) {
    leases(ctx).reset(set.space, set.key);
    return resp.OK;
  }
  return resp.error(`ERR unknown subcommand or wrong number of arguments for 'sl.lease|${sub}'`);
}

export const leaseCommands: Record<string, Command> = {
  'sl.lease': { arity: [3, 10], run: lease },
};
