import type { RedisClient } from './client.js';
import type { StoreLogger } from './gate/failure-options.js';

/** ioredis' own default `retryDelayOnFailover`, ms. */
const IOREDIS_FAILOVER_DELAY = 100;

/** The code of the warning below (stable, for filtering). */
export const RETRY_DELAY_WARNING = 'SLUICE_CLUSTER_RETRY_DELAY';

/**
 * The warning for an ioredis Cluster whose failover retry delay does not fit in the store's
 * timeout, or undefined. In a failover, even a planned one (`CLUSTER FAILOVER`), ioredis drops its
 * connection to the demoted primary and sends the command again after `retryDelayOnFailover`
 * (100 ms by default): with the store's default timeout of 100 ms every command caught in the
 * switch is answered by the failure policy (and still runs in Redis afterwards), so a planned
 * failover looks like an outage.
 */
export function retryDelayWarning(client: RedisClient, timeout: number): string | undefined {
  if (!client.isCluster) return undefined;
  const options = (client as { options?: { retryDelayOnFailover?: unknown } }).options;
  // node-redis clusters (no `options` of ioredis' shape) re-route on MOVED at once.
  if (options === undefined || typeof options !== 'object') return undefined;
  const given = options.retryDelayOnFailover;
  const delay = typeof given === 'number' ? given : IOREDIS_FAILOVER_DELAY;
  // The re-sent command needs its own round trip after the delay: half the timeout at most.
  if (delay <= timeout / 2) return undefined;
  return `RedisStore: the Cluster client's retryDelayOnFailover (${delay} ms; ioredis' default is 100) does not fit in the store's timeout (${timeout} ms): in a failover, even a planned one, every command ioredis re-sends is answered by the failure policy. Give the Cluster retryDelayOnFailover: ${Math.max(1, Math.floor(timeout / 10))} (at most half the timeout).`;
}

/**
 * A configuration warning, once per process and code: to the store's logger, else (the user took
 * failures to `onError`) as a Node process warning with its code.
 */
export function warn(logger: StoreLogger | undefined, code: string, message: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  if (logger !== undefined) {
    try {
      logger.warn(`[sluice] [${code}] ${message}`);
    } catch {
      // A logger that throws must not stop the store from being made.
    }
  } else process.emitWarning(message, { code });
}

const warned = new Set<string>();
