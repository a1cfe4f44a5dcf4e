import {
  assertKnownOptions,
  type Decision,
  decide,
  ErrorCode,
  type LeaseAcquire,
  type LeaseStore,
  type LimitCall,
  requireOption,
  SluiceError,
  type Store,
} from '@sluice/core';
import type { Redis } from 'ioredis';
import { specOf } from './algorithm-spec.js';
import { idOf } from './commands/sluice.js';

export interface ServerStoreOptions {
  /**
   * An ioredis client connected to a sluice-server (host, port, password, TLS and timeouts are
   * ioredis's options; `commandTimeout` bounds each decision). The store never closes it.
   */
  client: Redis;
  /** Prepended to every key (a namespace per application on a shared server). @default '' */
  prefix?: string;
  /**
   * The time of a decision made without `now`, ms since the epoch. @default the server's clock
   * (one clock for every client, as Redis `TIME` is for RedisStore)
   */
  clock?: () => number;
}

const KNOWN = ['client', 'prefix', 'clock'] as const satisfies readonly (keyof ServerStoreOptions)[];

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A key's bytes: UTF-8 (what redis-cli users type, so both reach the same bucket), or, for a
 * string that is not valid UTF-16 text, 0xFF and its UTF-16 code units (0xFF never occurs in
 * UTF-8, so the two forms never collide).
 */
function keyBytes(key: string): Buffer {
  if (!LONE_SURROGATE.test(key)) return Buffer.from(key, 'utf8');
  return Buffer.concat([Buffer.from([0xff]), Buffer.from(key, 'utf16le')]);
}

function encode(
  calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[] | readonly LimitCall[],
  now: number | undefined,
  prefix: string,
) {
  const args: (string | Buffer)[] = now === undefined ? [] : ['AT', String(now)];
  for (const call of calls) {
    args.push('LIMIT', specOf(call.algorithm), keyBytes(prefix + call.key));
    if ('cost' in call) args.push('COST', String(call.cost), 'POLICY', call.policy);
    const id = idOf(call.algorithm);
    if (id !== '') args.push('ID', id);
  }
  return args;
}

type Wire = readonly (string | number | null | Wire)[];

function decisionOf(fields: Wire): Decision {
  const map = new Map<string, string | number | null | Wire>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i] as string, fields[i + 1]!);
  const n = (name: string) => Number(map.get(name));
  const reason = map.get('reason');
  return decide(
    n('allowed') === 1,
    n('limit'),
    n('remaining'),
    n('resetAfter'),
    n('retryAfter'),
    n('delay'),
    String(map.get('policy')),
    reason === null || reason === undefined ? undefined : (reason as Decision['reason']),
  );
}

function perLimit(reply: Wire): Decision[] {
  const at = reply.indexOf('limits');
  return (reply[at + 1] as Wire).map((fields) => decisionOf(fields as Wire));
}

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
  private readonly client: Redis;
  private readonly prefix: string;
  private readonly clock: (() => number) | undefined;

  constructor(options: ServerStoreOptions) {
    assertKnownOptions('ServerStore', options, KNOWN);
    this.client = requireOption('client', options.client);
    if (typeof this.client?.call !== 'function') {
      throw new SluiceError(ErrorCode.INVALID_OPTION, 'client must be an ioredis client', {
        option: 'client',
      });
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

  private args(
    calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[] | readonly LimitCall[],
    now: number | undefined,
  ) {
    return encode(calls, now ?? this.clock?.(), this.prefix);
  }

  /** Concurrency leases, held in the server's memory (see SL.LEASE). */
  readonly leases: LeaseStore = {
    acquire: async (call, now) => this.lease('ACQUIRE', call, now),
    peek: async (call, now) => this.lease('PEEK', call, now),
    release: async (call, now) => {
      const at = now ?? this.clock?.();
      const reply = await this.client.call(
        'SL.LEASE',
        'RELEASE',
        keyBytes(call.space),
        keyBytes(this.prefix + call.key),
        call.id,
        ...(at === undefined ? [] : ['AT', String(at)]),
      );
      return reply === 1;
    },
    reset: async (space, key) => {
      await this.client.call('SL.LEASE', 'RESET', keyBytes(space), keyBytes(this.prefix + key));
    },
  };

  private async lease(
    verb: 'ACQUIRE' | 'PEEK',
    call: LeaseAcquire,
    now: number | undefined,
  ): Promise<Decision> {
    const at = now ?? this.clock?.();
    const reply = (await this.client.call(
      'SL.LEASE',
      verb,
      keyBytes(call.space),
      keyBytes(this.prefix + call.key),
      call.id,
      String(call.limit),
      String(call.ttl),
      String(call.retryAfter),
      call.policy,
      ...(at === undefined ? [] : ['AT', String(at)]),
    )) as Wire;
    return decisionOf(reply);
  }

  async consume(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    return perLimit((await this.client.call('SL.CHECK', ...this.args(calls, now))) as Wire);
  }

  async peek(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    return perLimit((await this.client.call('SL.PEEK', ...this.args(calls, now))) as Wire);
  }

  async refund(calls: readonly LimitCall[], now: number | undefined): Promise<void> {
    await this.client.call('SL.REFUND', ...this.args(calls, now));
  }

  async reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    if (calls.length > 0) await this.client.call('SL.RESET', ...this.args(calls, undefined));
  }

  shutdown(): void {
    // The client is the caller's: nothing of ours to release.
  }
}
