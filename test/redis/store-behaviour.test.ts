import { RedisStore, SyncedStore } from '@sluice/redis';
import { afterAll, describe } from 'vitest';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';
import { connectCluster, connectRedis, repeatsIoredis, storeClient, uniquePrefix } from './clients.js';

const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

// A long timeout and fail-closed policy: a slow answer on a loaded machine must fail the suite
// loudly rather than pass as a fail-open decision.
const options = { timeout: 5_000, failurePolicy: 'deny' as const, breaker: false as const };

describeStoreBehaviour(
  'RedisStore (standalone)',
  () => new RedisStore({ client: storeClient(standalone), prefix: uniquePrefix('suite'), ...options }),
);
describeStoreBehaviour(
  'RedisStore (Cluster)',
  () => new RedisStore({ client: storeClient(cluster), prefix: uniquePrefix('suite'), ...options }),
);
// The local-first store, one node: its decisions are the pure algorithm's on its local view. It
// refuses the kinds it cannot sync (sliding window log, leaky bucket queue, stepped and strict
// buckets): those tests are skipped. Given the tests' own clients, it runs under node-redis exactly
// as in project ioredis: skipped there.
describe.skipIf(repeatsIoredis.ownClient)('SyncedStore', () => {
  describeStoreBehaviour(
    'SyncedStore (standalone)',
    () => new SyncedStore({ client: standalone, prefix: uniquePrefix('suite'), interval: 0, breaker: false }),
    { skipUnsupported: true },
  );
  describeStoreBehaviour(
    'SyncedStore (Cluster)',
    () => new SyncedStore({ client: cluster, prefix: uniquePrefix('suite'), interval: 0, breaker: false }),
    { skipUnsupported: true },
  );
});
