import type { Decision } from '@sluice/core';
import type { LeaseAcquire, LeaseCall, LeaseStore } from '@sluice/core/adapter';
import type { RemoteCalls } from '@sluice/core/gate';
import type { Redis } from 'ioredis';
import { decisionOf, keyArg, type Reply } from './store-wire.js';

/**
 * Concurrency leases in a sluice-server's memory (SL.LEASE, `ServerStore.leases`), each call under
 * its server's timeout, breaker and failure policy, as RedisStore's leases are: when the server is
 * unavailable an acquire is answered by the policy (`'allow'` admits with a lease whose release
 * does nothing, `'deny'` refuses with `'store-unavailable'`, a fallback store's leases decide and
 * take that lease's release). A release never rejects: a failure is reported and answers `false`,
 * the lease then expires on the server after its ttl. An acquire that timed out but that the server
 * still ran is released as soon as its late reply shows it admitted.
 */
export class ServerLeases implements LeaseStore {
  constructor(
    private readonly clientFor: (key: string) => Redis,
    private readonly callsTo: (client: Redis) => RemoteCalls,
    private readonly at: (now: number | undefined) => number | undefined,
    private readonly prefixed: (key: string) => string,
  ) {}

  acquire(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    const client = this.clientFor(call.key);
    const { gate, leases } = this.callsTo(client);
    let sent: Promise<unknown> | undefined;
    return gate.map(
      'acquire',
      1,
      () => {
        sent = this.send(client, 'ACQUIRE', call, now);
        return sent;
      },
      (reply) => decisionOf(reply as Reply),
      () => {
        if (sent !== undefined) this.releaseIfLate(client, sent, call);
        return leases.acquire(call, now);
      },
    );
  }

  peek(call: LeaseAcquire, now: number | undefined): Promise<Decision> {
    const client = this.clientFor(call.key);
    const { gate, leases } = this.callsTo(client);
    return gate.map(
      'peek',
      1,
      () => this.send(client, 'PEEK', call, now),
      (reply) => decisionOf(reply as Reply),
      () => leases.peek(call, now),
    );
  }

  /** Never rejects: a failure is reported to `onError` and answers `false` (the ttl cleans up). */
  async release(call: LeaseCall, now: number | undefined): Promise<boolean> {
    const client = this.clientFor(call.key);
    const { gate, leases } = this.callsTo(client);
    const byPolicy = leases.release(call, now);
    if (byPolicy !== undefined) return byPolicy;
    return gate.map(
      'release',
      1,
      () => this.sendRelease(client, call, now),
      (reply) => reply === 1,
      () => false,
    );
  }

  /** Deletes the lease set (and the fallback store's). Rejects with `ERR_SLUICE_STORE_FAILURE` when the server fails. */
  async reset(space: string, key: string): Promise<void> {
    const client = this.clientFor(key);
    const { gate, leases } = this.callsTo(client);
    await leases.reset(space, key);
    await gate.strict('reset', 1, () =>
      client.call('SL.LEASE', 'RESET', keyArg(space), keyArg(this.prefixed(key))),
    );
  }

  private send(
    client: Redis,
    verb: 'ACQUIRE' | 'PEEK',
    call: LeaseAcquire,
    now: number | undefined,
  ): Promise<unknown> {
    const at = this.at(now);
    return client.call(
      'SL.LEASE',
      verb,
      keyArg(call.space),
      keyArg(this.prefixed(call.key)),
      call.id,
      String(call.limit),
      String(call.ttl),
      String(call.retryAfter),
      call.policy,
      ...(at === undefined ? [] : ['AT', String(at)]),
    );
  }

  private sendRelease(client: Redis, call: LeaseCall, now: number | undefined): Promise<unknown> {
    const at = this.at(now);
    return client.call(
      'SL.LEASE',
      'RELEASE',
      keyArg(call.space),
      keyArg(this.prefixed(call.key)),
      call.id,
      ...(at === undefined ? [] : ['AT', String(at)]),
    );
  }

  /** A timed-out acquire the server ran after all would hold a slot nobody releases: give it back. */
  private releaseIfLate(client: Redis, sent: Promise<unknown>, call: LeaseAcquire): void {
    sent.then(
      (reply) => {
        // Not through the breaker: it is open precisely when late replies come (see CallGate.cleanup).
        if (decisionOf(reply as Reply).allowed)
          void this.callsTo(client).gate.cleanup('release', 1, () =>
            this.sendRelease(client, call, undefined),
          );
      },
      () => {
        // Failed (not late): nothing was taken.
      },
    );
  }
}
