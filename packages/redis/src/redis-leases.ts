import type { Decision } from '@sluice/core';
import { type LeaseAcquire, type LeaseCall, type LeaseStore, leaseDecision } from '@sluice/core/adapter';
import type { CallGate, LeaseFailureAnswers } from '@sluice/core/gate';
import { leaseKeys } from './key-escape.js';
import type { ResolvedOptions } from './options.js';
import { deleteKeys, nowArg, type ScriptCommand, scriptCommand } from './script-command.js';
import { LEASE_SCRIPT } from './scripts/lease-script.js';
import { hashSlot } from './slot.js';

/** The ioredis command the lease script is registered under. */
const LEASE_COMMAND = 'sluiceLease';

/**
 * Concurrency leases in Redis (`RedisStore.leases`): the Lua twin of core's `MemoryLeases`, one
 * sorted set per `(space, key)` and one round trip per operation, so a `ConcurrencyLimiter` or a
 * `FleetShedder` on a shared Redis counts the whole fleet's requests in flight.
 *
 * Every call goes through the store's timeout, breaker and failure policy. When Redis is
 * unavailable an acquire is answered by the policy: `'local'` (or a fallback store) decides on
 * its leases in this process (and takes that lease's release), `'allow'` admits with a lease
 * whose release does nothing, `'deny'` refuses with reason `'store-unavailable'`. A release never rejects: a failure is reported to
 * `onError` and answers `false`; the lease then expires in Redis after its ttl. An acquire that
 * timed out but that Redis still ran later is released as soon as its late reply shows it admitted.
 */
export class RedisLeases implements LeaseStore {
  private readonly script: ScriptCommand;

  /** @param failure what the failure policy answers for leases while Redis does not */
  constructor(
    private readonly options: ResolvedOptions,
    private readonly gate: CallGate,
    private readonly failure: LeaseFailureAnswers,
  ) {
    this.script = scriptCommand(options.client, LEASE_COMMAND, LEASE_SCRIPT);
  }

  /** The Redis keys of one lease set: the sorted set and its ttl (what `redis-cli` shows). */
  keysFor(space: string, key: string): [set: string, ttl: string] {
    return leaseKeys(this.options.prefix, space, key);
  }

  /** Leases answered by the failure policy and not yet released (for tests and metrics). */
  get policyLeaseCount(): number {
    return this.failure.size;
  }

  acquire(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    let sent: Promise<unknown[]> | undefined;
    return this.gate.run(
      'acquire',
      1,
      () => {
        sent = this.run(call, now, { op: 'acquire', limit: call.limit, ttl: call.ttl });
        return sent.then((reply) => readLease(reply, call));
      },
      () => {
        if (sent !== undefined) this.releaseIfLate(sent, call);
        return this.failure.acquire(call, now);
      },
      this.slotOf(call),
    );
  }

  peek(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    return this.gate.run(
      'peek',
      1,
      () =>
        this.run(call, now, { op: 'peek', limit: call.limit, ttl: call.ttl }).then((reply) =>
          readLease(reply, call),
        ),
      () => this.failure.peek(call, now),
      this.slotOf(call),
    );
  }

  /** Never rejects: a failure is reported to `onError` and answers `false` (the ttl cleans up). */
  async release(call: LeaseCall, now: number | undefined): Promise<boolean> {
    return (await this.failure.release(call, now)) ?? (await this.releaseInRedis(call, now));
  }

  /**
   * Deletes the lease set (and the fallback store's). Rejects with `ERR_SLUICE_STORE_FAILURE` when
   * Redis fails: an administrative action whose caller must know it did not happen.
   */
  async reset(space: string, key: string): Promise<void> {
    await this.failure.reset(space, key);
    await this.gate.strict('reset', 1, () => deleteKeys(this.options.client, this.keysFor(space, key)));
  }

  /** Forgets the leases the failure policy answered for (`RedisStore.shutdown`). */
  clear(): void {
    this.failure.clear();
  }

  // Redis ------------------------------------------------------------------------------------------

  /** One lease script call; `acquire` and `peek` also send the limit and ttl. */
  private run(
    call: LeaseCall,
    now: number | undefined,
    op: 'release' | { op: 'acquire' | 'peek'; limit: number; ttl: number },
  ): Promise<unknown[]> {
    const { redisTime, clock, replayGrace } = this.options;
    const keys = this.keysFor(call.space, call.key);
    const time = nowArg(now, redisTime, clock, replayGrace);
    if (op === 'release') return this.script(2, ...keys, time, op, call.id);
    return this.script(2, ...keys, time, op.op, call.id, op.limit, String(op.ttl));
  }

  private releaseInRedis(call: LeaseCall, now: number | undefined): Promise<boolean> {
    return this.gate.run(
      'release',
      1,
      () => this.run(call, now, 'release').then((reply) => reply[1] === 1),
      () => false,
      this.slotOf(call),
    );
  }

  /** On a Cluster, the slot of a lease set (its keys share one), whose node's breaker the call passes. */
  private slotOf(call: LeaseCall): number | undefined {
    return this.options.client.isCluster ? hashSlot(this.keysFor(call.space, call.key)[0]) : undefined;
  }

  /** A timed-out acquire that Redis ran after all would hold a slot nobody releases: give it back. */
  private releaseIfLate(sent: Promise<unknown[]>, call: LeaseAcquire): void {
    sent.then(
      (reply) => {
        // Not through the breaker: it is open precisely when late replies come (see CallGate.cleanup).
        if (reply[1] === 1)
          void this.gate.cleanup('release', 1, () =>
            this.run({ space: call.space, key: call.key, id: call.id }, undefined, 'release'),
          );
      },
      () => {
        // Failed (not late): nothing was taken.
      },
    );
  }
}

/** `{ now, allowed, count, oldest, newest }` → the same decision the memory leases give. */
function readLease(reply: readonly unknown[], call: LeaseAcquire): Decision {
  return leaseDecision(
    reply[1] === 1,
    reply[2] as number,
    score(reply[3]),
    score(reply[4]),
    call,
    Number(reply[0]),
  );
}

function score(value: unknown): number | undefined {
  return typeof value === 'string' ? Number(value) : undefined;
}
