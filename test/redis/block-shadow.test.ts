import { fixedWindow, Limiter } from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { describeBlockAndShadow } from '../suites/block-shadow.js';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';
import { countScripts } from './script-counter.js';

const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

// Fail closed and no breaker: a slow answer must fail loudly, never pass as an admission. The
// last run turns the deny cache on: blocked keys are answered locally, with the same decisions.
const options = { timeout: 5_000, failurePolicy: 'deny' as const, breaker: false as const, denyCache: 0 };

describeBlockAndShadow(
  'RedisStore (standalone)',
  () => new RedisStore({ client: standalone, prefix: uniquePrefix('block'), ...options }),
);
describeBlockAndShadow(
  'RedisStore (Cluster)',
  () => new RedisStore({ client: cluster, prefix: uniquePrefix('block'), ...options }),
);
describeBlockAndShadow(
  'RedisStore (standalone, deny cache)',
  () => new RedisStore({ client: standalone, prefix: uniquePrefix('block'), ...options, denyCache: 1000 }),
);

describe('deny cache and blocks', () => {
  it('a blocked key is answered locally for the rest of its block: one round trip learns the block', async () => {
    let now = 1_000_000;
    const algorithm = fixedWindow({ limit: 1, window: 1000 });
    // A server of this test's own: Redis counts the scripts it runs.
    const scripts = await countScripts();
    // A generous timeout: the failure policy must not stand in for Redis on a loaded machine.
    const store = new RedisStore({
      client: scripts.client,
      denyCache: 10,
      clock: () => now,
      timeout: 5_000,
    });
    const limiter = new Limiter({ limits: [{ name: 'login', algorithm, block: '1m' }], store });
    try {
      expect(await limiter.check('k')).toMatchObject({ allowed: true });
      // Starts the block (not kept locally: its wait may be the algorithm's).
      expect(await limiter.check('k')).toMatchObject({ reason: 'rate-limited', retryAfter: 60_000 });
      now += 2_000;
      // Redis answers 'blocked'; from here on the process knows when the block ends.
      expect(await limiter.check('k')).toMatchObject({ reason: 'blocked', retryAfter: 58_000 });
      for (let i = 0; i < 5; i++) {
        now += 10_000;
        expect(await limiter.check('k', { cost: 1 })).toMatchObject({
          reason: 'blocked',
          retryAfter: 48_000 - i * 10_000,
        });
      }
      now += 8_000;
      expect(await limiter.check('k')).toMatchObject({ allowed: true });
      // Admitted, started, learned the block, then nothing until it ended, then admitted.
      expect(await scripts.count()).toBe(4);
    } finally {
      await store.shutdown();
      await scripts.stop();
    }
  });
});
