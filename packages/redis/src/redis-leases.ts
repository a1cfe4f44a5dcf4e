import { type Decision, ErrorCode, SluiceError } from '@sluice/core';
import {
  decide,
  type LeaseAcquire,
  type LeaseCall,
  type LeaseStore,
  leaseDecision,
} from '@sluice/core/adapter';
import type { CallGate } from './call-gate.js';
import { leaseKeys } from './key-escape.js';
import type { ResolvedOptions } from './options.js';
import { PolicyLeases } from './policy-leases.js';
import { deleteKeys, nowArg, type ScriptCommand, scriptCommand } from './script-command.js';
import { LEASE_SCRIPT } from './scripts/lease-script.js';

/** The ioredis command the lease script is registered under. */
const LEASE_COMMAND = 'sluiceLease';

/**
 * Concurrency leases in Redis (`RedisStore.leases`): the Lua twin of core's `MemoryLeases`, one
 * sorted set per `(space, key)` and one round trip per operation, so a `ConcurrencyLimiter` or a
 * `FleetShedder` on a shared Redis counts the whole fleet's requests in flight.
 *
 * Every call goes through the store's timeout, breaker and failure policy. When Redis is
 * unavailable an acquire is answered by the policy: `'allow'` admits with a lease whose release
 * does nothing, `'deny'` refuses with reason `'store-unavailable'`, a fallback store's leases
 * decide (and take that lease's release). A release never rejects: a failure is reported to
 * `onError` and answers `false`; the lease then expires in Redis after its ttl. An acquire that
 * timed out but that Redis still ran later is released as soon as its late reply shows it admitted.
 */
export class RedisLeases implements LeaseStore {
  private readonly script: ScriptCommand;
  private readonly policyLeases = new PolicyLeases();

  constructor(
    private readonly options: ResolvedOptions,
    private readonly gate: CallGate,
  ) {
    this.script = scriptCommand(options.client, LEASE_COMMAND, LEASE_SCRIPT);
  }

  /** The Redis keys of one lease set: the sorted set and its ttl (what `redis-cli` shows). */
  keysFor(space: string, key: string): [set: string, ttl: string] {
    return leaseKeys(this.options.prefix, space, key);
  }

  /** Leases answered by the failure policy and not yet released (for tests and metrics). */
  get policyLeaseCount(): number {
    return this.policyLeases.size;
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
        return this.failAcquire(call, now);
      },
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
      () => this.failPeek(call, now),
    );
  }

  /** Never rejects: a failure is reported to `onError` and answers `false` (the ttl cleans up). */
  async release(call: LeaseCall, now: number | undefined): Promise<boolean> {
    const policy = this.policyLeases.take(call.id);
    if (policy !== undefined) {
      if (policy.store === undefined) return false;
      try {
        return await policy.store.release(call, now);
      } catch (error) {
        this.gate.report('fallback', 1, error);
        return false;
      }
    }
    return this.releaseInRedis(call, now);
  }

  /**
   * Deletes the lease set (and the fallback store's). Rejects with `ERR_SLUICE_STORE_FAILURE` when
   * Redis fails: an administrative action whose caller must know it did not happen.
   */
  async reset(space: string, key: string): Promise<void> {
    const policy = this.options.failurePolicy;
    if (typeof policy === 'object') await policy.leases?.reset(space, key);
    await this.gate.strict('reset', 1, () => deleteKeys(this.options.client, this.keysFor(space, key)));
  }

  /** Forgets the leases the failure policy answered for (`RedisStore.shutdown`). */
  clear(): void {
    this.policyLeases.clear();
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
    );
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

  // Failure ----------------------------------------------------------------------------------------

  private async failAcquire(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    const policy = this.options.failurePolicy;
    if (policy === 'deny') return this.unavailable(call);
    const answer = await this.fallback((leases) => leases.acquire(call, now));
    if (answer !== undefined) {
      if (answer.decision.allowed) this.remember(call, answer.leases);
      return answer.decision;
    }
    // Fail open: admitted as a fresh set would admit it, held nowhere.
    this.remember(call, undefined);
    return decide(true, call.limit, call.limit - 1, 0, 0, 0, call.policy, undefined);
  }

  private async failPeek(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    if (this.options.failurePolicy === 'deny') return this.unavailable(call);
    const answer = await this.fallback((leases) => leases.peek(call, now));
    return answer?.decision ?? decide(true, call.limit, call.limit, 0, 0, 0, call.policy, undefined);
  }

  /**
   * The fallback store's answer when the policy is a store with leases; `undefined` (fail open)
   * when the policy is `'allow'`, the store has no leases, or it failed too (both reported).
   */
  private async fallback(
    run: (leases: LeaseStore) => Decision | Promise<Decision>,
  ): Promise<{ decision: Decision; leases: LeaseStore } | undefined> {
    const policy = this.options.failurePolicy;
    if (policy === 'allow' || policy === 'deny') return undefined;
    const leases = policy.leases;
    if (leases === undefined) {
      this.gate.report('fallback', 1, noLeases());
      return undefined;
    }
    try {
      return { decision: await run(leases), leases };
    } catch (error) {
      this.gate.report('fallback', 1, error);
      return undefined;
    }
  }

  private unavailable(call: LeaseAcquire): Decision {
    return decide(false, call.limit, 0, 0, this.gate.retryAfter(), 0, call.policy, 'store-unavailable');
  }

  private remember(call: LeaseAcquire, store: LeaseStore | undefined): void {
    const now = this.options.clock();
    this.policyLeases.add(call.id, now + call.ttl, store, now);
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

function noLeases(): SluiceError {
  return new SluiceError(
    ErrorCode.UNSUPPORTED,
    'RedisStore: the fallback store has no leases (store.leases); the lease was admitted (fail open)',
  );
}
