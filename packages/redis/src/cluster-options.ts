import { firstInProcess } from '@sluice/core/adapter';
import type { StoreLogger } from '@sluice/core/gate';
import type { RedisClient } from './client.js';

/** ioredis' own defaults of `retryDelayOnFailover` and `retryDelayOnClusterDown`, ms. */
const IOREDIS_FAILOVER_DELAY = 100;
const IOREDIS_CLUSTER_DOWN_DELAY = 100;

/** The codes of the warnings below (stable, for filtering). */
export const RETRY_DELAY_WARNING = 'SLUICE_CLUSTER_RETRY_DELAY';
export const CLUSTER_DOWN_RETRY_WARNING = 'SLUICE_CLUSTER_DOWN_RETRY';

/** An ioredis Cluster's options, or undefined for node-redis clusters (no `options` of that shape). */
function ioredisClusterOptions(client: RedisClient): Record<string, unknown> | undefined {
  if (!client.isCluster) return undefined;
  const options = (client as { options?: unknown }).options;
  return options !== null && typeof options === 'object' ? (options as Record<string, unknown>) : undefined;
}

/** An ioredis Cluster's `retryDelayOnClusterDown`, ioredis' default where it is not given. */
function clusterDownDelay(options: Record<string, unknown>): number {
  const given = options.retryDelayOnClusterDown;
  return typeof given === 'number' ? given : IOREDIS_CLUSTER_DOWN_DELAY;
}

/**
 * Whether the client re-sends a command refused with `CLUSTERDOWN` (an ioredis or iovalkey
 * Cluster whose `retryDelayOnClusterDown` is above 0, as ioredis' `handleError` tests it; 100 ms
 * by default). With 0, and on any other client, the refusal reaches the store as it is.
 */
export function resendsClusterDown(client: RedisClient): boolean {
  const options = ioredisClusterOptions(client);
  return options !== undefined && clusterDownDelay(options) > 0;
}

/**
 * The warning for an ioredis Cluster whose failover retry delay does not fit in the store's
 * timeout, or undefined. In a failover, even a planned one (`CLUSTER FAILOVER`), ioredis drops its
 * connection to the demoted primary and sends the command again after `retryDelayOnFailover`
 * (100 ms by default): with the store's default timeout of 100 ms every command caught in the
 * switch is answered by the failure policy (and still runs in Redis afterwards), so a planned
 * failover looks like an outage.
 */
export function retryDelayWarning(client: RedisClient, timeout: number): string | undefined {
  // node-redis clusters re-route on MOVED at once.
  const options = ioredisClusterOptions(client);
  if (options === undefined) return undefined;
  const given = options.retryDelayOnFailover;
  const delay = typeof given === 'number' ? given : IOREDIS_FAILOVER_DELAY;
  // The re-sent command needs its own round trip after the delay: half the timeout at most.
  if (delay <= timeout / 2) return undefined;
  return `RedisStore: the Cluster client's retryDelayOnFailover (${delay} ms; ioredis' default is 100) does not fit in the store's timeout (${timeout} ms): in a failover, even a planned one, every command ioredis re-sends is answered by the failure policy. Give the Cluster retryDelayOnFailover: ${Math.max(1, Math.floor(timeout / 10))} (at most half the timeout).`;
}

/**
 * The warning for an ioredis Cluster that re-sends a command refused with `CLUSTERDOWN` for longer
 * than the store's timeout, or undefined. While the cluster is down (a primary failed, Redis'
 * default full coverage), every node refuses at once; ioredis re-sends after
 * `retryDelayOnClusterDown` (100 ms by default), up to `maxRedirections` (16) times, so with the
 * default 100 ms timeout the store's call outlives it: the node, which answered
 * at once, is then counted as away, its breaker opens, and its keys stay the failure policy's for
 * a cooldown after the cluster serves again. With 0 the refusal reaches the store at once, the
 * policy answers, and the next call goes to Redis.
 */
export function clusterDownRetryWarning(client: RedisClient, timeout: number): string | undefined {
  const options = ioredisClusterOptions(client);
  if (options === undefined) return undefined;
  const delay = clusterDownDelay(options);
  const redirections = typeof options.maxRedirections === 'number' ? options.maxRedirections : 16;
  // The re-sends end (with the refusal, which the gate counts as answered) within the timeout.
  if (delay <= 0 || delay * redirections <= timeout) return undefined;
  return `RedisStore: the Cluster client re-sends commands refused with CLUSTERDOWN after retryDelayOnClusterDown (${delay} ms; ioredis' default is 100) up to ${redirections} times, for longer than the store's timeout (${timeout} ms): while the cluster is down, nodes that answer at once look away, their breakers open, and their keys stay the failure policy's for a cooldown after the cluster serves again. Give the Cluster retryDelayOnClusterDown: 0 (the policy answers the refusal at once).`;
}

/**
 * A configuration warning, once per process and code (core's `firstInProcess`, which every sluice
 * package shares, so two copies of this one in an app warn once too): to the store's logger, else
 * (the user took failures to `onError`) as a Node process warning with its code.
 */
export function warn(logger: StoreLogger | undefined, code: string, message: string): void {
  if (!firstInProcess(code)) return;
  if (logger !== undefined) {
    try {
      logger.warn(`[sluice] [${code}] ${message}`);
    } catch {
      // A logger that throws must not stop the store from being made.
    }
  } else process.emitWarning(message, { code });
}
