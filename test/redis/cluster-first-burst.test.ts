/**
 * Regression: ioredis 5.11 and 6 reject a Cluster command routed to a node that is still
 * connecting (when the Cluster's offline queue is off, as the store asks), and retry it after
 * `retryDelayOnFailover` (100 ms). Node connections open lazily, on the first command routed to
 * each node, so the first burst on a fresh Cluster client took ~120 ms: past the default 100 ms
 * timeout every call of it failed open (`'allow'`), the breaker opened, and three clients sharing
 * a limit of 50 admitted 91. Runs on every client of the matrix (`SLUICE_REDIS_CLIENT`).
 */
import { type Decision, fixedWindow, Limiter } from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { describe, expect, it } from 'vitest';
import { clientFamilyName, connectCluster, uniquePrefix } from './clients.js';

describe(`a fresh Cluster client (${clientFamilyName})`, () => {
  it('decides its first burst in Redis within the default timeout: no call fails open, the breaker stays closed', async () => {
    const client = await connectCluster();
    try {
      const errors: RedisStoreErrorEvent[] = [];
      // The defaults users get: timeout 100 ms, failurePolicy 'allow', the breaker on.
      const store = new RedisStore({
        client,
        prefix: uniquePrefix('first-burst'),
        onError: (e) => errors.push(e),
      });
      const limiter = new Limiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }), store });
      const now = Date.now();
      // 60 keys spread over the slots of all three primaries, from the first moment.
      const decisions = (await Promise.all(
        Array.from({ length: 60 }, (_, i) => limiter.check(`user-${i}`, { now })),
      )) as Decision[];
      expect(errors).toEqual([]);
      expect(store.breakerState).toBe('closed');
      // Decided by Redis: one unit taken from each key (the failure policy would answer remaining 5).
      expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual(decisions.map(() => [true, 4]));
    } finally {
      client.disconnect();
    }
  });

  it('three fresh clients sharing one limit admit exactly the limit, never more', async () => {
    const clients = await Promise.all([connectCluster(), connectCluster(), connectCluster()]);
    try {
      const errors: RedisStoreErrorEvent[] = [];
      const prefix = uniquePrefix('first-burst-shared');
      const limiters = clients.map(
        (client) =>
          new Limiter({
            algorithm: fixedWindow({ limit: 50, window: '1m' }),
            store: new RedisStore({ client, prefix, onError: (e) => errors.push(e) }),
          }),
      );
      const now = Date.now();
      const decisions = (await Promise.all(
        Array.from({ length: 150 }, (_, i) => limiters[i % 3]!.check('shared', { now })),
      )) as Decision[];
      expect(errors).toEqual([]);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(50);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });
});
