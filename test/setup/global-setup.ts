import type { TestProject } from 'vitest/node';
import { type RedisProcess, startCluster, startRedis } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Port of the shared standalone redis-server. */
    redisPort: number;
    /** Ports of the shared 3-primary Redis Cluster. */
    redisClusterPorts: number[];
  }
}

/**
 * Starts one standalone redis-server and one 3-primary Cluster for the whole run (every test file
 * reuses them; each file isolates itself with its own key prefix) and stops them afterwards.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [standalone, cluster] = await Promise.all([startRedis(), startCluster()]);
  project.provide('redisPort', standalone.port);
  project.provide(
    'redisClusterPorts',
    cluster.map((node: RedisProcess) => node.port),
  );
  return async () => {
    await Promise.all([standalone, ...cluster].map((node) => node.stop()));
  };
}
