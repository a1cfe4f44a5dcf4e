import { type Decision, ErrorCode, SluiceError, type Store } from '@sluice/core';
import {
  assertKnownOptions,
  type LeaseAcquire,
  type LeaseStore,
  type LimitCall,
  requireOption,
} from '@sluice/core/adapter';
import type { Redis } from 'ioredis';
import { HashRing } from './hash-ring.js';
import { compactDecisions, decisionOf, encodeCalls, keyArg, type Wire } from './store-wire.js';

export interface ServerStoreOptions {
  /**
   * An ioredis client connected to a sluice-server (host, port, password, TLS and timeouts are
   * ioredis's options; `commandTimeout` bounds each decision). The store never closes it.
   * Give either `client` or `clients`.
   */
  client?: Redis;
  /**
   * Several sluice-servers, each owning part of the key space: a key goes to the server a
   * consistent-hash ring (160 virtual nodes per server, named by the client's `host:port`) picks
   * for it. Adding a server moves about 1/(n+1) of the keys to it; their state starts fresh there.
   * The store never closes these clients.
   */
  clients?: readonly Redis[];
  /** Prepended to every key (a namespace per application on a shared server). @default '' */
  prefix?: string;
  /**
   * The time of a decision made without `now`, ms since the epoch. @default the server's clock
   * (one clock for every client, as Redis `TIME` is for RedisStore)
   */
  clock?: () => number;
}

const KNOWN = [
  'client',
  'clients',
  'prefix',
  'clock',
] as const satisfies readonly (keyof ServerStoreOptions)[];

/**
 * A `Store` on a sluice-server: each decision is one command (SL.CHECK with every layered limit),
 * so one round trip, all-or-nothing on the server. Failures reject, and the Limiter reports
 * them as ERR_SLUICE_STORE_FAILURE.
 *
 * @example
 * const limiter = new Limiter({
 *   algorithm: gcra({ rate: 10, period: '1s' }),
 *   store: new ServerStore({ client: new Redis({ port: 9049 }) }),
 * });
 */
export class ServerStore implements Store {
  private readonly client: Redis | undefined;
  private readonly ring: HashRing<Redis> | undefined;
  private readonly prefix: string;
  private readonly clock: (() => number) | undefined;

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
  }

  /** The server owning `key` (the user key, before the prefix): every limit of one key lives there. */
  private clientFor(key: string): Redis {
    return this.client ?? this.ring!.nodeFor(key);
  }

  /** The calls grouped by the server owning their key, with their positions in `calls`. */
  private groups<C extends Pick<LimitCall, 'key'>>(calls: readonly C[]): Map<Redis, number[]> {
    const groups = new Map<Redis, number[]>();
    calls.forEach((call, i) => {
      const client = this.clientFor(call.key);
      const group = groups.get(client);
      if (group === undefined) groups.set(client, [i]);
      else group.push(i);
    });
    return groups;
  }

  private args(
    calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[] | readonly LimitCall[],
    now: number | undefined,
    compact = false,
  ) {
    return encodeCalls(calls, now ?? this.clock?.(), this.prefix, compact);
  }

  /** Concurrency leases, held in the server's memory (see SL.LEASE). */
  readonly leases: LeaseStore = {
    acquire: async (call, now) => this.lease('ACQUIRE', call, now),
    peek: async (call, now) => this.lease('PEEK', call, now),
    release: async (call, now) => {
      const at = now ?? this.clock?.();
      const reply = await this.clientFor(call.key).call(
        'SL.LEASE',
        'RELEASE',
        keyArg(call.space),
        keyArg(this.prefix + call.key),
        call.id,
        ...(at === undefined ? [] : ['AT', String(at)]),
      );
      return reply === 1;
    },
    reset: async (space, key) => {
      await this.clientFor(key).call('SL.LEASE', 'RESET', keyArg(space), keyArg(this.prefix + key));
    },
  };

  private async lease(
    verb: 'ACQUIRE' | 'PEEK',
    call: LeaseAcquire,
    now: number | undefined,
  ): Promise<Decision> {
    const at = now ?? this.clock?.();
    const reply = (await this.clientFor(call.key).call(
      'SL.LEASE',
      verb,
      keyArg(call.space),
      keyArg(this.prefix + call.key),
      call.id,
      String(call.limit),
      String(call.ttl),
      String(call.retryAfter),
      call.policy,
      ...(at === undefined ? [] : ['AT', String(at)]),
    )) as Wire;
    return decisionOf(reply);
  }

  /**
   * One SL.CHECK per server holding some of the keys: all-or-nothing on that server. When the
   * keys span servers and one server refuses (or fails), what the others admitted is refunded
   * (SL.REFUND, `Algorithm.refund`), as RedisStore does across Cluster slots. Between the two
   * commands another request may see the consumed tokens; an algorithm without `refund` keeps them.
   */
  async consume(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    assertPlainCalls(calls);
    const at = now ?? this.clock?.();
    const groups = [...this.groups(calls)];
    if (groups.length === 1) {
      const [client] = groups[0]!;
      return compactDecisions((await client.call('SL.CHECK', ...this.args(calls, at, true))) as Wire, calls);
    }
    const results = await Promise.allSettled(
      groups.map(async ([client, indices]) => {
        const mine = indices.map((i) => calls[i]!);
        return compactDecisions((await client.call('SL.CHECK', ...this.args(mine, at, true))) as Wire, mine);
      }),
    );
    const admitted = results.map((r) => r.status === 'fulfilled' && r.value.every((d) => d.allowed));
    if (!admitted.every(Boolean)) {
      await Promise.all(
        groups.map(async ([, indices], g) => {
          if (admitted[g])
            await this.refund(
              indices.map((i) => calls[i]!),
              at,
            ).catch(() => {});
        }),
      );
    }
    const decisions: Decision[] = new Array(calls.length);
    results.forEach((result, g) => {
      if (result.status === 'rejected') throw result.reason;
      groups[g]![1].forEach((i, j) => {
        decisions[i] = result.value[j]!;
      });
    });
    return decisions;
  }

  async peek(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    assertPlainCalls(calls);
    const at = now ?? this.clock?.();
    const decisions: Decision[] = new Array(calls.length);
    await Promise.all(
      [...this.groups(calls)].map(async ([client, indices]) => {
        const mine = indices.map((i) => calls[i]!);
        const reply = compactDecisions(
          (await client.call('SL.PEEK', ...this.args(mine, at, true))) as Wire,
          mine,
        );
        indices.forEach((i, j) => {
          decisions[i] = reply[j]!;
        });
      }),
    );
    return decisions;
  }

  async refund(calls: readonly LimitCall[], now: number | undefined): Promise<void> {
    const at = now ?? this.clock?.();
    await Promise.all(
      [...this.groups(calls)].map(([client, indices]) =>
        client.call(
          'SL.REFUND',
          ...this.args(
            indices.map((i) => calls[i]!),
            at,
          ),
        ),
      ),
    );
  }

  async reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    await Promise.all(
      [...this.groups(calls)].map(([client, indices]) =>
        client.call(
          'SL.RESET',
          ...this.args(
            indices.map((i) => calls[i]!),
            undefined,
          ),
        ),
      ),
    );
  }

  shutdown(): void {
    // The client is the caller's: nothing of ours to release.
  }
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
