/**
 * Issue 37.2: while Redis Cluster refuses with `CLUSTERDOWN` (a primary failed and, with Redis'
 * default `cluster-require-full-coverage yes`, every node refuses every slot), the nodes answer,
 * and at once. That refusal is the cluster's state, not the node being away: it must not open the
 * node's breaker, or the node's keys stay the failure policy's for a whole cooldown after the
 * cluster serves again (seen: 130 requests on healthy primaries after `cluster_state:ok`).
 *
 * A Cluster of the test's own: `CLUSTER DELSLOTS` of one slot on the key's primary puts that node
 * in `cluster_state:fail` (it answers `CLUSTERDOWN` to every command); `ADDSLOTS` puts it back.
 * The breaker opens after one counted failure and stays open a minute: the verdict does not
 * depend on timing, and a generous timeout keeps a loaded machine's slow answer out of it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fixedWindow, Limiter } from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSlot } from '../../packages/redis/src/slot.js';
import { type RedisProcess, startCluster } from '../setup/redis-server.js';

const run = promisify(execFile);
const cli = async (port: number, ...args: string[]) =>
  (await run('redis-cli', ['-p', String(port), ...args])).stdout.trim();

async function clusterState(port: number): Promise<string> {
  return /cluster_state:(\w+)/.exec(await cli(port, 'cluster', 'info'))?.[1] ?? '';
}

async function until(what: string, test: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await test()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('RedisStore on a Cluster answering CLUSTERDOWN', () => {
  let nodes: RedisProcess[];
  beforeAll(async () => {
    nodes = await startCluster();
  }, 60_000);
  afterAll(async () => {
    await Promise.all((nodes ?? []).map((node) => node.stop()));
  });

  // The README's setup (retryDelayOnClusterDown: 0: the refusal reaches the store at once), and
  // ioredis' default (it re-sends for 16 × 100 ms, then rejects with "Too many Cluster redirections").
  it.each([
    ['the README setup', { retryDelayOnFailover: 10, retryDelayOnClusterDown: 0 }],
    ["ioredis' default retries", {}],
  ])(
    'with %s: the policy answers while the cluster is down, and Redis decides again as soon as it serves (the breaker never opened)',
    async (_label, retries) => {
      const prefix = `down${Math.random().toString(36).slice(2, 8)}:`;
      const client = new Cluster(
        nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
        { enableOfflineQueue: false, ...retries },
      );
      client.on('error', () => {});
      const changes: string[] = [];
      const store = new RedisStore({
        client,
        prefix,
        timeout: 5_000,
        failurePolicy: 'deny',
        breaker: { failures: 1, cooldown: 60_000 },
        onBreakerChange: (state) => changes.push(state),
        onError: () => {},
      });
      const limiter = new Limiter({ algorithm: fixedWindow({ limit: 100, window: '1h' }), store });
      let restore = async () => {};
      try {
        expect(await limiter.check('k')).toMatchObject({ allowed: true, remaining: 99 });
        // The key's primary, and another slot it owns (the key's own stays served when it is back).
        const slot = hashSlot(`${prefix}{k}`);
        const range = (await client.cluster('SLOTS')).find(([from, to]) => from <= slot && slot <= to);
        const owner = range?.[2]?.[1] as number;
        const other = slot === 0 ? 1 : slot - 1;
        await cli(owner, 'cluster', 'delslots', String(other));
        restore = async () => {
          await cli(owner, 'cluster', 'addslots', String(other));
          await until('cluster_state:ok', async () => (await clusterState(owner)) === 'ok');
        };
        await until('cluster_state:fail', async () => (await clusterState(owner)) === 'fail');

        const refused = await limiter.check('k');
        expect(refused).toMatchObject({ allowed: false, reason: 'store-unavailable' });
        expect(store.breakerState).toBe('closed');

        await restore();
        restore = async () => {};
        // Redis decides at once: no cooldown to sit out.
        expect(await limiter.check('k')).toMatchObject({ allowed: true, remaining: 98 });
        expect(changes).toEqual([]);
      } finally {
        await restore();
        await store.shutdown();
        client.disconnect();
      }
    },
    60_000,
  );
});
