// Type tests of the stores' public API (@sluice/redis, @sluice/server), as apps write it: checked
// by `pnpm test` (vitest's typecheck mode, project `types`) and `pnpm typecheck`; never run.
import { fixedWindow, Limiter, type Store } from '@sluice/core';
import { type FailurePolicy, RedisStore, type RedisStoreOptions, SyncedStore } from '@sluice/redis';
import { ServerStore } from '@sluice/server';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { describe, expectTypeOf, test } from 'vitest';

describe('@sluice/redis', () => {
  test('RedisStore takes ioredis and node-redis clients and clusters as they are', () => {
    new RedisStore({ client: new Redis({ enableOfflineQueue: false }) });
    new RedisStore({ client: new Cluster([{ host: '127.0.0.1', port: 7000 }]) });
    new RedisStore({ client: createClient() });
    new RedisStore({ client: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) });
    // @ts-expect-error a client is required
    new RedisStore({});
    // @ts-expect-error not a Redis client
    new RedisStore({ client: {} });
  });

  test('a store is a Store; its failure policy is a word or another store', () => {
    const client = new Redis();
    expectTypeOf(new RedisStore({ client })).toMatchTypeOf<Store>();
    expectTypeOf(new SyncedStore({ client })).toMatchTypeOf<Store>();
    expectTypeOf<'allow'>().toMatchTypeOf<FailurePolicy>();
    expectTypeOf<'deny'>().toMatchTypeOf<FailurePolicy>();
    expectTypeOf<RedisStoreOptions['timeout']>().toEqualTypeOf<number | undefined>();
    new Limiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }), store: new RedisStore({ client }) });
  });
});

describe('@sluice/server', () => {
  test('ServerStore is a Store on an ioredis client to sluice-server', () => {
    expectTypeOf(new ServerStore({ client: new Redis({ port: 6380 }) })).toMatchTypeOf<Store>();
  });
});
