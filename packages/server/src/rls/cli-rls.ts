import type { Store } from '@sluice/core';
import type { SluiceServer } from '../server.js';
import { LmdbBackend, type RlsBackend, StoreBackend } from './backends.js';
import { RateLimitService } from './rate-limit-service.js';

export interface CliRlsOptions {
  readonly port: number;
  readonly host: string | undefined;
  readonly configDir: string;
  /** `redis://host:port`: counters in that Redis, shared by every replica pointed at it. */
  readonly redis: string | undefined;
  /** `host:port,host:port`: counters in that Redis Cluster. */
  readonly redisCluster: string | undefined;
  /** RedisStore's `timeout`: the longest wait for Redis per call, ms. @default 100 */
  readonly redisTimeout: number | undefined;
  readonly shadowMode: boolean;
  readonly responseHeaders: boolean;
  readonly log: (event: string, fields: Record<string, unknown>) => void;
}

/**
 * The redis store for `--rls-redis` / `--rls-redis-cluster`, loaded only then: ioredis and
 * @sluice/redis's RedisStore stay unloaded for a server on LMDB.
 */
async function redisStore(options: CliRlsOptions): Promise<Store> {
  const [{ RedisStore }, ioredis] = await Promise.all([import('@sluice/redis'), import('ioredis')]);
  const timeout = options.redisTimeout === undefined ? {} : { timeout: options.redisTimeout };
  // The store's few failure lines (failing, breaker, a Cluster give-back that failed: see
  // all_or_nothing in the README) in the server's JSON log, not bare on the console.
  const logger = { warn: (message: string) => options.log('rls-redis', { message }) };
  const common = { failurePolicy: 'deny' as const, logger, ...timeout };
  // No offline queue: a call made while Redis is away fails now instead of waiting to be sent on
  // reconnection, where it would count a hit the caller was told was not counted (UNAVAILABLE).
  const client =
    options.redisCluster === undefined
      ? new ioredis.Redis(options.redis!, { enableOfflineQueue: false })
      : new ioredis.Cluster(clusterNodes(options.redisCluster), { enableOfflineQueue: false });
  // The store reports its failures (the logger above); without a listener ioredis would also
  // print each reconnection error on its own, outside the JSON log.
  client.on('error', () => {});
  // 'deny' marks its answers 'store-unavailable', which StoreBackend turns into gRPC UNAVAILABLE: a
  // replica never acknowledges a hit that is not in Redis ('local' would count it in its memory).
  return new RedisStore({ client, ...common });
}

/** `host:port,host:port` as ioredis' Cluster nodes. */
function clusterNodes(list: string): { host: string; port: number }[] {
  return list.split(',').map((node) => {
    const colon = node.lastIndexOf(':');
    return { host: node.slice(0, colon), port: Number(node.slice(colon + 1)) };
  });
}

export interface CliRls {
  readonly service: RateLimitService;
  /** Stops the service, then the Redis store it opened (if any). */
  close(): Promise<void>;
}

/** The rate limit service of `sluice-server --grpc-port`, on the server's LMDB or on Redis. */
export async function startRls(server: SluiceServer, options: CliRlsOptions): Promise<CliRls> {
  if (options.redis !== undefined && options.redisCluster !== undefined) {
    throw new Error('--rls-redis and --rls-redis-cluster: give one');
  }
  const store =
    options.redis === undefined && options.redisCluster === undefined ? undefined : await redisStore(options);
  const backend: RlsBackend =
    store === undefined ? new LmdbBackend(server.stateDb) : new StoreBackend(store, Date.now, 'redis');
  const service = new RateLimitService({
    configDir: options.configDir,
    backend,
    port: options.port,
    ...(options.host === undefined ? {} : { host: options.host }),
    shadowMode: options.shadowMode,
    responseHeaders: options.responseHeaders,
    log: options.log,
  });
  return {
    service,
    async close() {
      await service.close();
      await store?.shutdown();
    },
  };
}
