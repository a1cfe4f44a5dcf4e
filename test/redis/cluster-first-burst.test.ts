/**
 * Regression: ioredis 5.11 and 6 reject a Cluster command routed to a node that is still
 * connecting (when the Cluster's offline queue is off, as the store asks), and retry it after
 * `retryDelayOnFailover` (100 ms). Node connections open lazily, on the first command routed to
 * each node, so the first burst on a fresh Cluster client took ~120 ms: past the default 100 ms
 * timeout every call of it failed open (`'allow'`) and the breaker opened; three fresh clients
 * sharing a limit of 50 admitted 91 (test/reliability/concurrency.test.ts, on ioredis 6). Runs on
 * every client of the matrix (`SLUICE_REDIS_CLIENT`).
 */
import { type Decision, fixedWindow, Limiter } from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientFamilyName, connectCluster, uniquePrefix } from './clients.js';

describe(`a fresh Cluster client (${clientFamilyName})`, () => {
  // This process's first burst also pays for loading and compiling the store's code; that cost is
  // not what these tests are about, so another client pays it first. Each test's own client is new.
  beforeAll(async () => {
    const warm = await connectCluster();
    try {
      const store = new RedisStore({
        client: warm,
        prefix: uniquePrefix('first-burst-warm'),
        timeout: 5_000,
      });
      const limiter = new Limiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }), store });
      await Promise.all(Array.from({ length: 60 }, (_, i) => limiter.check(`user-${i}`)));
    } finally {
      warm.disconnect();
    }
  });

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

  it('sends no call of its first burst to a node still connecting (no retry after retryDelayOnFailover, no slot map refresh)', async () => {
    // The mechanism, free of wall-clock limits: a long timeout, so a call ioredis rejected and
    // retried 100 ms later would still succeed; its retry refreshes the slot map ('refresh').
    const client = await connectCluster();
    try {
      let refreshes = 0;
      client.on('refresh', () => refreshes++);
      const errors: RedisStoreErrorEvent[] = [];
      const store = new RedisStore({
        client,
        prefix: uniquePrefix('first-burst-mechanism'),
        timeout: 10_000,
        onError: (e) => errors.push(e),
      });
      const limiter = new Limiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }), store });
      const now = Date.now();
      const decisions = (await Promise.all(
        Array.from({ length: 60 }, (_, i) => limiter.check(`user-${i}`, { now })),
      )) as Decision[];
      expect(errors).toEqual([]);
      expect(decisions.every((d) => d.allowed && d.remaining === 4)).toBe(true);
      expect(refreshes).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});
