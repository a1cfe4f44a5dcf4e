import { acquireIn, peekLeaseIn, releaseIn, storedId } from '@sluice/host/state';
import { keyTooLong } from '../key-too-long.js';
import * as resp from '../resp.js';
import { timeError } from '../time-arg.js';
import type { Command, CommandContext, CommandResult } from './context.js';
import { decisionReply } from './sluice.js';

/**
 * Concurrency leases (the concurrency limiter and the fleet shedder), stored in LMDB like every
 * limit's state and changed inside the turn's transaction (lease-state.ts), so a lease limit is
 * exact across the server's workers. A lease set lasts until its newest lease expires; a restart
 * keeps the leases in flight until then.
 *
 *   SL.LEASE ACQUIRE|PEEK space key id limit ttl retryAfter policy [AT ms]
 *   SL.LEASE RELEASE space key id [AT ms]      SL.LEASE RESET space key
 */

const text = (b: Buffer | undefined) => (b === undefined ? '' : b.toString('latin1'));

function positive(b: Buffer | undefined): number | undefined {
  const n = Number(text(b));
  return b !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** The `AT ms` at `index` (`undefined`: none), or the reply refusing it. */
function at(args: readonly Buffer[], index: number, usage: string): number | undefined | resp.Reply {
  if (args.length <= index) return undefined;
  if (text(args[index]).toLowerCase() !== 'at' || args.length !== index + 2) {
    return resp.error(`ERR syntax error: ${usage}`);
  }
  const given = text(args[index + 1]);
  return timeError(given, Number(given)) ?? Number(given);
}

function lease(args: readonly Buffer[], ctx: CommandContext): CommandResult {
  const sub = text(args[1]).toLowerCase();
  const key = args[3];
  if (key !== undefined) {
    const tooLong = keyTooLong(key);
    if (tooLong !== undefined) return tooLong;
  }
  // The space is the limiter's name: part of the stored key's prefix, as an algorithm's spec is.
  const id = key === undefined ? '' : storedId(`lease:${text(args[2])}`, key);
  if ((sub === 'acquire' || sub === 'peek') && args.length >= 9) {
    const usage = 'SL.LEASE ACQUIRE|PEEK space key id limit ttl retryAfter policy [AT ms]';
    const limit = positive(args[5]);
    const ttl = positive(args[6]);
    const retryAfter = positive(args[7]);
    const now = at(args, 9, usage);
    if (typeof now === 'string' || Buffer.isBuffer(now)) return now;
    if (
      limit === undefined ||
      !Number.isSafeInteger(limit) ||
      ttl === undefined ||
      retryAfter === undefined
    ) {
      return resp.error(`ERR syntax error: ${usage}`);
    }
    const call = {
      space: text(args[2]),
      key: text(key),
      id: text(args[4]),
      limit,
      ttl,
      retryAfter,
      policy: args[8]!.toString(),
    };
    return ctx.db.enqueue([id], (tx) =>
      decisionReply([
        sub === 'peek'
          ? peekLeaseIn(tx, id, call, now ?? tx.now, tx.now)
          : acquireIn(tx, id, call, now ?? tx.now, tx.now),
      ]),
    );
  }
  if (sub === 'release' && args.length >= 5) {
    const now = at(args, 5, 'SL.LEASE RELEASE space key id [AT ms]');
    if (typeof now === 'string' || Buffer.isBuffer(now)) return now;
    const leaseId = text(args[4]);
    return ctx.db.enqueue([id], (tx) =>
      resp.integer(releaseIn(tx, id, leaseId, now ?? tx.now, tx.now) ? 1 : 0),
    );
  }
  if (sub === 'reset' && args.length === 4) {
    return ctx.db.enqueue([id], (tx) => {
      tx.write(id, undefined, 0, tx.now);
      return resp.OK;
    });
  }
  return resp.error(`ERR unknown subcommand or wrong number of arguments for 'sl.lease|${sub}'`);
}

export const leaseCommands: Record<string, Command> = {
  'sl.lease': { arity: [3, 10], run: lease },
};
