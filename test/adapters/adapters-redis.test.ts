import { RedisStore } from '@sluice/redis';
import { afterAll } from 'vitest';
import { connectCluster, connectRedis, uniquePrefix } from '../redis/clients.js';
import { storeSubjects, subjects } from './subjects.js';
import { adapterSuite } from './suite.js';

// The same adapter behaviour suite (rate limits, concurrency leases, shedders) as on the memory
// store, on a real Redis: every adapter on one Redis (an asynchronous store), Express 5 and Fastify
// on a Cluster too (see `storeSubjects`). Each store gets its own key prefix, so tests never see
// each other's state; the fake clock drives the store's time exactly as it drives the memory
// store's. The timeout is generous: these tests assert behaviour, not latency, on a shared 2-core
// machine.
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(async () => {
  standalone.disconnect();
  cluster.disconnect();
});

for (const [name, client, on] of [
  ['Redis', standalone, subjects],
  ['Redis Cluster', cluster, storeSubjects],
] as const) {
  const makeStore = (clock: () => number) =>
    new RedisStore({
      client,
      clock,
      prefix: uniquePrefix(`adapters-${name}`),
      timeout: 2000,
      breaker: false,
    });
  for (const subject of on) {
    adapterSuite({ ...subject, name: `${subject.name} on ${name}` }, makeStore);
  }
}
