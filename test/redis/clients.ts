import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { Cluster, Redis, storeClientReady } from './client-family.js';

export {
  CLIENT_FAMILIES,
  type ClientFamilyName,
  Cluster,
  clientFamilyName,
  Redis,
  repeatsIoredis,
  storeClient,
} from './client-family.js';

/** A connected client to the shared standalone server (or `port`), offline queue off. */
export async function connectRedis(port = inject('redisPort')): Promise<Redis> {
  const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false, lazyConnect: true });
  await client.connect();
  await storeClientReady(client);
  return client;
}

/** A connected client to the shared Cluster. */
export async function connectCluster(): Promise<Cluster> {
  const ports = inject('redisClusterPorts');
  const client = new Cluster(
    ports.map((port) => ({ host: '127.0.0.1', port })),
    { enableOfflineQueue: false, lazyConnect: true },
  );
  await client.connect();
  await storeClientReady(client);
  return client;
}

/** A key prefix no other test file uses, so files can share the servers. */
export function uniquePrefix(name: string): string {
  return `test:${name}:${randomUUID().slice(0, 8)}:`;
}
