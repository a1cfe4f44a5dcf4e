/**
 * `RedisStore`'s `client` is typed structurally (packages/redis/src/client.ts): instances of every
 * supported library are accepted as they are, with no cast in user code. `pnpm typecheck` is the
 * test of the types; this file also checks that the store is made on each.
 */
import { RedisStore } from '@sluice/redis';
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis';
import { Cluster as Cluster6, Redis as Redis6 } from 'ioredis6';
import { Redis as Valkey, Cluster as ValkeyCluster } from 'iovalkey';
import { createClient as createClient6, createCluster as createCluster6 } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';
import { expect, it } from 'vitest';

it('takes Redis and Cluster instances of ioredis 5, ioredis 6 and iovalkey without casts', () => {
  // Lazy clients to nothing: they never connect, only their types and shape matter here.
  const nodes = [{ host: '127.0.0.1', port: 1 }];
  const redis5 = new Redis5({ lazyConnect: true });
  const cluster5 = new Cluster5(nodes, { lazyConnect: true });
  const redis6 = new Redis6({ lazyConnect: true });
  const cluster6 = new Cluster6(nodes, { lazyConnect: true });
  const valkey = new Valkey({ lazyConnect: true });
  const valkeyCluster = new ValkeyCluster(nodes, { lazyConnect: true });
  const stores = [
    new RedisStore({ client: redis5 }),
    new RedisStore({ client: cluster5 }),
    new RedisStore({ client: redis6 }),
    new RedisStore({ client: cluster6 }),
    new RedisStore({ client: valkey }),
    new RedisStore({ client: valkeyCluster }),
  ];
  expect(stores.map((store) => store.breakerState)).toEqual(stores.map(() => 'closed'));
  for (const client of [redis5, cluster5, redis6, cluster6, valkey, valkeyCluster]) client.disconnect();
});

it('takes clients and clusters of node-redis 6 and 5 without casts', () => {
  // Never connected: only their types and shape matter here.
  const rootNodes = [{ socket: { host: '127.0.0.1', port: 1 } }];
  const clients = [
    createClient6(),
    createCluster6({ rootNodes }),
    createClient5(),
    createCluster5({ rootNodes }),
  ];
  const stores = [
    new RedisStore({ client: clients[0]! }),
    new RedisStore({ client: createCluster6({ rootNodes }) }),
    new RedisStore({ client: createClient5() }),
    new RedisStore({ client: createCluster5({ rootNodes }) }),
  ];
  expect(stores.map((store) => store.breakerState)).toEqual(stores.map(() => 'closed'));
});
