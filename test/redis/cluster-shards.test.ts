import { type Decision, fixedWindow, Limiter } from '@sluice/core';
import { type BreakerState, RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hashSlot } from '../../packages/redis/src/slot.js';
import { forgetWarnings } from '../setup/process-warnings.js';
import { type RedisProcess, startCluster } from '../setup/redis-server.js';
import { Cluster, storeClient, storeClientReady } from './client-family.js';
import { uniquePrefix } from './clients.js';

// Issue 29 §1: a store had one breaker for the whole Cluster. When one shard was away, keys on the
// healthy shards were answered by the failure policy too (30-60% of their requests in a failover).
// Now each primary has its own breaker: a shard away is the policy's for its own keys only.

const algorithm = fixedWindow({ limit: 100, window: 60_000 });

describe('a Cluster client whose failover retry cannot fit in the timeout', () => {
  it('regression: is warned about at creation, once, with a code (a planned failover was answered by the policy)', () => {
    // The warning is written once per process: start from none given (another file may have).
    forgetWarnings();
    const ports = inject('redisClusterPorts');
    const lines: string[] = [];
    const logger = { warn: (line: string) => lines.push(line) };
    const fitting = new Cluster([{ host: '127.0.0.1', port: ports[0]! }], {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryDelayOnFailover: 10,
      retryDelayOnClusterDown: 0,
    });
    const defaults = new Cluster([{ host: '127.0.0.1', port: ports[0]! }], {
      lazyConnect: true,
      enableOfflineQueue: false,
    });
    try {
      new RedisStore({ client: fitting, logger });
      expect(lines).toEqual([]);
      new RedisStore({ client: defaults, logger });
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        /SLUICE_CLUSTER_RETRY_DELAY.*retryDelayOnFailover \(100 ms.*timeout \(100 ms\)/,
      );
      // Issue 37.2: a re-sent CLUSTERDOWN outlasts the timeout and opens the breakers of nodes that answer.
      expect(lines[1]).toMatch(/SLUICE_CLUSTER_DOWN_RETRY.*retryDelayOnClusterDown \(100 ms/);
      new RedisStore({ client: defaults, logger });
      expect(lines).toHaveLength(2);
    } finally {
      fitting.disconnect();
      defaults.disconnect();
    }
  });
});

describe('one shard away', () => {
  let nodes: RedisProcess[];
  let client: Cluster;

  beforeAll(async () => {
    nodes = await startCluster();
    client = new Cluster([{ host: '127.0.0.1', port: nodes[0]!.port }], {
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    await client.connect();
    await storeClientReady(client);
  }, 60_000);
  afterAll(async () => {
    for (const node of nodes) node.resume();
    client.disconnect();
    await Promise.all(nodes.map((node) => node.stop()));
  });

  /** Keys whose slot is owned by `node`, and keys owned by any other node, 8 of each. */
  function keysBy(store: RedisStore, node: RedisProcess): { away: string[]; healthy: string[] } {
    const slots = (client as unknown as { slots: string[][] }).slots;
    const away: string[] = [];
    const healthy: string[] = [];
    for (let i = 0; away.length < 8 || healthy.length < 8; i++) {
      const key = `user:${i}`;
      const owner = slots[hashSlot(store.keyFor(algorithm, key))]![0]!;
      (owner.endsWith(`:${node.port}`) ? away : healthy).push(key);
    }
    return { away: away.slice(0, 8), healthy: healthy.slice(0, 8) };
  }

  it("regression: a paused primary opens its own breaker only; the other shards' keys are still decided by Redis (they got 'store-unavailable')", async () => {
    const errors: RedisStoreErrorEvent[] = [];
    const changes: [BreakerState, string | undefined][] = [];
    let clock = 1_000_000;
    const store = new RedisStore({
      client: storeClient(client),
      prefix: uniquePrefix('shards'),
      failurePolicy: 'deny',
      // Generous: a healthy shard must not time out on a loaded machine.
      timeout: 1_000,
      clock: () => clock,
      breaker: { failures: 2, cooldown: 60_000 },
      onError: (event) => errors.push(event),
      onBreakerChange: (state, _previous, node) => changes.push([state, node]),
    });
    const limiter = new Limiter({ algorithm, store });
    const paused = nodes[1]!;
    const { away, healthy } = keysBy(store, paused);
    for (const key of [...away, ...healthy]) {
      expect(await limiter.check(key, { now: 0 })).toMatchObject({ allowed: true });
    }
    paused.pause();
    try {
      // The shard away: its breaker opens after two timeouts, then answers at once.
      for (const key of away) {
        expect(await limiter.check(key, { now: 0 })).toMatchObject({
          allowed: false,
          reason: 'store-unavailable',
        });
      }
      // Every other key: decided by Redis, counted there, never the policy's.
      const decisions: Decision[] = [];
      for (let round = 0; round < 3; round++) {
        for (const key of healthy) decisions.push((await limiter.check(key, { now: 0 })) as Decision);
      }
      expect(decisions.filter((d) => d.reason === 'store-unavailable')).toEqual([]);
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect(decisions.at(-1)).toMatchObject({ remaining: 100 - 4 });
      expect(errors.length).toBe(2);
      expect(store.breakerState).toBe('open');
      expect(changes).toEqual([['open', `127.0.0.1:${paused.port}`]]);
      // Layered limits spanning the shard away and a healthy one: the policy's, whole.
      const layered = new Limiter({
        store,
        limits: [
          { name: 'a', algorithm },
          { name: 'b', algorithm: fixedWindow({ limit: 50, window: 60_000 }) },
        ],
      });
      expect(await layered.check([away[0]!, healthy[0]!], { now: 0 })).toMatchObject({
        allowed: false,
        reason: 'store-unavailable',
      });
      expect(await layered.check([healthy[0]!, healthy[1]!], { now: 0 })).toMatchObject({ allowed: true });
    } finally {
      paused.resume();
    }
    // The shard back, its cooldown over: its probe closes its breaker.
    clock += 60_000;
    expect(await limiter.check(away[0]!, { now: 0 })).toMatchObject({ allowed: true });
    expect(store.breakerState).toBe('closed');
    expect(changes.at(-1)).toEqual(['closed', `127.0.0.1:${paused.port}`]);
  });
});
