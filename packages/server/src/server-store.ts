import { type Decision, ErrorCode, type LimitCall, SluiceError, type Store } from '@sluice/core';
import { assertKnownOptions, requireOption } from '@sluice/core/adapter';
import { type BreakerState, type RemoteCalls, remoteCalls, resolveFailureOptions } from '@sluice/core/gate';
import type { Redis } from 'ioredis';
import { HashRing } from './hash-ring.js';
import { serverAnswered } from './reply-error.js';

import { ServerLeases } from './server-leases.js';
import { KNOWN, type ServerStoreOptions } from './server-store-options.js';
import { compactDecisions, encodeCalls, type Reply } from './store-wire.js';

/**
 * A `Store` on a sluice-server: each decision is one command (SL.CHECK with every layered limit),
 * so one round trip, all-or-nothing on the server. Every call is bounded by `timeout` and passes
 * the circuit breaker; failures go to the failure policy and `onError`, never to the caller
 * (RedisStore's failure handling, from `@sluice/core/gate`). `reset` rejects when it fails.
 *
 * @example
 * const limiter = new Limiter({
 *   algorithm: gcra({ rate: 10, period: '1s' }),
 *   store: new ServerStore({ client: new Redis({ port: 9049, enableOfflineQueue: false }) }),
 * });
 */
export class ServerStore implements Store {
  private readonly client: Redis | undefined;
  private readonly ring: HashRing<Redis> | undefined;
  private readonly prefix: string;
  private readonly clock: (() => number) | undefined;
  /** The failure handling of each server's client: one breaker per server, so one down does not open the others'. */
  private readonly calls = new Map<Redis, RemoteCalls>();
  /** The store that decides while a server is away (the failure policy's), if any. */
  private readonly fallback: Store | undefined;

  constructor(options: ServerStoreOptions) {
    assertKnownOptions('ServerStore', options, KNOWN);
    if (options.clients === undefined) {
      this.client = requireOption('client', options.client);
      assertClient('client', this.client);
    } else {
      if (options.client !== undefined) {
        throw new SluiceError(ErrorCode.INVALID_OPTION, 'give either client or clients, not both', {
          option: 'clients',
        });
      }
      this.ring = ringOf(options.clients);
    }
    this.prefix = options.prefix ?? '';
    if (typeof this.prefix !== 'string') {
      throw new SluiceError(ErrorCode.INVALID_OPTION, 'prefix must be a string', {
        option: 'prefix',
        value: this.prefix,
      });
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new SluiceError(ErrorCode.INVALID_OPTION, 'clock must be a function returning ms', {
        option: 'clock',
      });
    }
    this.clock = options.clock;
    const clock = options.clock ?? Date.now;
    const failure = resolveFailureOptions('ServerStore', options, clock);
    this.fallback = failure.fallback;
    for (const client of options.clients ?? [this.client!]) {
      this.calls.set(
        client,
        remoteCalls({
          ...failure,
          client,
          clock,
          names: { store: 'ServerStore', backend: 'sluice-server' },
          backendAnswered: serverAnswered,
        }),
      );
    }
    this.leases = new ServerLeases(
      (key) => this.clientFor(key),
      (client) => this.callsTo(client),
      (now) => now ?? this.clock?.(),
      (key) => this.prefix + key,
    );
  }

  /** The breaker's state; with `clients`, the worst of the servers' (`'open'` if any is open). */
  get breakerState(): BreakerState {
    return worstState([...this.calls.values()]);
  }

  private callsTo(client: Redis): RemoteCalls {
    return this.calls.get(client)!;
  }

  /** The server owning `key` (the user key, before the prefix): every limit of one key lives there. */
  private clientFor(key: string): Redis {
    return this.client ?? this.ring!.nodeFor(key);
  }

  /**
   * The calls split by the server owning their key: each part with its calls' positions in
   * `calls`, those calls, and that server's failure handling (breaker, timeout, policy).
   */
  private parts<C extends Pick<LimitCall, 'key'>>(calls: readonly C[]): ServerPart<C>[] {
    const groups = new Map<Redis, number[]>();
    calls.forEach((call, i) => {
      const client = this.clientFor(call.key);
      const group = groups.get(client);
      if (group === undefined) groups.set(client, [i]);
      else group.push(i);
    });
    return [...groups].map(([client, indices]) => ({
      client,
      indices,
      mine: groups.size === 1 ? calls : indices.map((i) => calls[i]!),
      ...this.callsTo(client),
    }));
  }

  private args(
    calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[] | readonly LimitCall[],
    now: number | undefined,
    compact = false,
  ) {
    return encodeCalls(calls, now ?? this.clock?.(), this.prefix, compact);
  }

  /**
   * Concurrency leases, held in the server's memory (see SL.LEASE), under the same timeout, breaker
   * and failure policy as limits.
   */
  readonly leases: ServerLeases;

  /**
   * One SL.CHECK per server holding some of the keys: all-or-nothing on that server. When the
   * keys span servers and one server refuses (or fails, and the failure policy refuses), what the
   * others admitted is refunded (SL.REFUND, `Algorithm.refund`), as RedisStore does across Cluster
   * slots. Between the two commands another request may see the consumed tokens; an algorithm
   * without `refund` keeps them.
   */
  async consume(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    assertPlainCalls(calls);
    const at = now ?? this.clock?.();
    const parts = this.parts(calls);
    if (parts.length === 1) {
      const { client, gate, answers } = parts[0]!;
      return gate.map(
        'consume',
        calls.length,
        () => client.call('SL.CHECK', ...this.args(calls, at, true)),
        (reply) => compactDecisions(reply as Reply, calls),
        () => answers.consume(calls, now),
      );
    }
    // Which parts the failure policy answered: their refund goes to it, not to their server.
    const byPolicy = parts.map(() => false);
    const results = await Promise.all(
      parts.map(({ client, mine, gate, answers }, p) =>
        gate.map(
          'consume',
          mine.length,
          () => client.call('SL.CHECK', ...this.args(mine, at, true)),
          (reply) => compactDecisions(reply as Reply, mine),
          () => {
            byPolicy[p] = true;
            return answers.consume(mine, now);
          },
        ),
      ),
    );
    const admitted = results.map((decisions) => decisions.every((d) => d.allowed));
    if (!admitted.every(Boolean)) {
      await Promise.all(
        parts.map(async ({ client, mine, gate, answers }, p) => {
          if (!admitted[p]) return;
          if (byPolicy[p]) await answers.refund(mine, now);
          else
            await gate.compensate('rollback', mine.length, () =>
              client.call('SL.REFUND', ...this.args(mine, at)),
            );
        }),
      );
    }
    return inPlace(calls.length, parts, results);
  }

  async peek(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    assertPlainCalls(calls);
    const at = now ?? this.clock?.();
    const parts = this.parts(calls);
    const replies = await Promise.all(
      parts.map(({ client, mine, gate, answers }) =>
        gate.map(
          'peek',
          mine.length,
          () => client.call('SL.PEEK', ...this.args(mine, at, true)),
          (reply) => compactDecisions(reply as Reply, mine),
          () => answers.peek(mine, now),
        ),
      ),
    );
    return inPlace(calls.length, parts, replies);
  }

  /**
   * Gives back held units (SL.REFUND). Never rejects: a failure is reported to `onError`
   * (`operation: 'refund'`); while a server is unavailable the fallback store (when that is the
   * policy) is refunded instead, since it took the consumption then.
   */
  async refund(calls: readonly LimitCall[], now: number | undefined): Promise<void> {
    const at = now ?? this.clock?.();
    await Promise.all(
      this.parts(calls).map(({ client, mine, gate, answers }) =>
        gate.run(
          'refund',
          mine.length,
          () => client.call('SL.REFUND', ...this.args(mine, at)).then(() => undefined),
          () => answers.refund(mine, now),
        ),
      ),
    );
  }

  /**
   * Takes up to each call's cost, never below zero (`SL.CHARGE`, core's `chargeStep`); answers
   * the units taken. Never rejects: a failure is reported to `onError` (`operation: 'charge'`);
   * while a server is unavailable the fallback store (when that is the policy) is charged instead.
   */
  async charge(calls: readonly LimitCall[], now: number | undefined): Promise<number[]> {
    const at = now ?? this.clock?.();
    const parts = this.parts(calls);
    const units = await Promise.all(
      parts.map(async ({ client, mine, gate, answers }) => {
        const taken = await gate.map(
          'charge',
          mine.length,
          () => client.call('SL.CHARGE', ...this.args(mine, at)),
          (reply) => (reply as unknown[]).map(Number),
          () => answers.charge(mine, now),
        );
        // Nothing taken where neither the server nor a fallback store took the charge.
        return taken ?? mine.map(() => 0);
      }),
    );
    return inPlace(calls.length, parts, units);
  }

  /** Deletes the limits' state (and the fallback store's). Rejects with `ERR_SLUICE_STORE_FAILURE` when a server fails. */
  async reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    await this.fallback?.reset(calls);
    await Promise.all(
      this.parts(calls).map(({ client, mine, gate }) =>
        gate.strict('reset', mine.length, () => client.call('SL.RESET', ...this.args(mine, undefined))),
      ),
    );
  }

  /** Forgets the leases the failure policy answered and shuts down the fallback store. The clients are the caller's. */
  async shutdown(): Promise<void> {
    for (const calls of this.calls.values()) calls.leases.clear();
    await this.fallback?.shutdown();
  }
}

/** The calls of one server (`ServerStore.parts`). */
interface ServerPart<C> extends RemoteCalls {
  readonly client: Redis;
  /** The positions in the batch of this server's calls. */
  readonly indices: readonly number[];
  /** This server's calls, in batch order. */
  readonly mine: readonly C[];
}

/** Each part's answers (one per call of the part) placed at its calls' positions in the batch. */
function inPlace<T>(
  length: number,
  parts: readonly ServerPart<unknown>[],
  answers: readonly (readonly T[])[],
): T[] {
  const all: T[] = new Array(length);
  parts.forEach(({ indices }, p) => {
    indices.forEach((i, j) => {
      all[i] = answers[p]![j]!;
    });
  });
  return all;
}

function assertClient(option: string, client: unknown): asserts client is Redis {
  if (typeof (client as Redis | undefined)?.call !== 'function') {
    throw new SluiceError(ErrorCode.INVALID_OPTION, `${option} must be an ioredis client`, { option });
  }
}

/** The ring over `clients`, each named by its `host:port` (so a server keeps its keys when others come and go). */
function ringOf(clients: readonly Redis[]): HashRing<Redis> {
  if (!Array.isArray(clients) || clients.length === 0) {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'clients must be a non-empty array of ioredis clients', {
      option: 'clients',
    });
  }
  const named = clients.map((client, i) => {
    assertClient(`clients[${i}]`, client);
    return { name: `${client.options.host ?? 'localhost'}:${client.options.port ?? 6379}`, node: client };
  });
  const names = new Set(named.map((n) => n.name));
  if (names.size !== named.length) {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'clients must reach distinct servers (host:port)', {
      option: 'clients',
      value: named.map((n) => n.name),
    });
  }
  return new HashRing(named);
}

/**
 * sluice-server does not evaluate shadow mode or blocks (`LimitCall.shadow`, `LimitCall.block`):
 * answering such calls as plain limits would enforce a shadow limit and never block, so they are
 * refused, naming what to use instead.
 */
function assertPlainCalls(calls: readonly LimitCall[]): void {
  for (const call of calls) {
    if (call.shadow === true || call.block !== undefined) {
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `ServerStore does not support ${call.shadow === true ? 'shadow mode (enforce: false)' : 'block'} on limit ${JSON.stringify(call.policy)}; use MemoryStore or RedisStore for it`,
        { option: call.shadow === true ? 'enforce' : 'block', value: call.policy },
      );
    }
  }
}

const ORDER: readonly BreakerState[] = ['closed', 'half-open', 'open'];

/** The worst breaker state of the servers' (`'open'` if any is open). */
function worstState(servers: readonly RemoteCalls[]): BreakerState {
  let worst = 0;
  for (const server of servers) worst = Math.max(worst, ORDER.indexOf(server.gate.state));
  return ORDER[worst]!;
}
