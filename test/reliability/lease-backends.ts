/**
 * The three stores that keep concurrency leases outside the process, opened the same way by the
 * lease fault test and by its holder process (lease-holder.ts): RedisStore on a redis-server,
 * ServerStore on a sluice-server, HostStore on an LMDB directory.
 */
import type { Store } from '@sluice/core';
import { HostStore } from '@sluice/host';
import { RedisStore } from '@sluice/redis';
import { ServerStore } from '@sluice/server';
import { Redis } from 'ioredis';

export type LeaseBackend = 'redis' | 'server' | 'host';

/** Where a backend is: a loopback port (redis, server) or a directory (host). */
export interface BackendAddress {
  readonly backend: LeaseBackend;
  readonly port?: number;
  readonly path?: string;
}

export interface OpenedStore {
  readonly store: Store;
  /** The store's client (redis, server): its `status` says when it is connected again. */
  readonly client?: Redis;
  close(): Promise<void>;
}

/**
 * A store on `address`, failing as the test asks: a timeout short enough for a test, no breaker
 * (each call meets the fault on its own), the lines it would log collected in `lines`.
 */
export function openStore(
  address: BackendAddress,
  options: { timeout?: number; lines?: string[] } = {},
): OpenedStore {
  if (address.backend === 'host') {
    const store = new HostStore({ path: address.path!, logger: false });
    return { store, close: () => store.shutdown() };
  }
  // The README's client: no offline queue, so a call on a broken connection fails at once.
  const client = new Redis({ host: '127.0.0.1', port: address.port!, enableOfflineQueue: false });
  client.on('error', () => {});
  const failure = {
    timeout: options.timeout ?? 5_000,
    breaker: false as const,
    logger: { warn: (line: string) => options.lines?.push(line) },
  };
  const store =
    address.backend === 'redis'
      ? new RedisStore({ client, ...failure })
      : new ServerStore({ client, ...failure });
  return {
    store,
    client,
    async close() {
      await store.shutdown();
      client.disconnect();
    },
  };
}
