import { status } from '@grpc/grpc-js';
import { RedisStore } from '@sluice/redis';
import { StoreBackend } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, connectCluster, connectRedis, type Redis, uniquePrefix } from '../redis/clients.js';
import { startRedis } from '../setup/redis-server.js';
import { d, type RlsSubject, startRls } from './rls-harness.js';

// Service replicas on one Redis (and on a Redis Cluster) share their counters through RedisStore:
// two rate limit services, each its own gRPC server and its own Redis connection, under one load
// spread over both, admit exactly the limit between them. Time is the test's (StoreBackend's clock).

const CONFIG = {
  'shared.yaml': `
domain: shared
descriptors:
  - key: tenant
    rate_limit:
      unit: minute
      requests_per_unit: 50
  - key: smooth
    rate_limit:
      algorithm: gcra
      requests_per_unit: 30
      duration: 1m
      burst: 30
`,
};

const T = Date.UTC(2030, 5, 1, 12, 0, 0);

describe.each([
  ['Redis', () => connectRedis()],
  ['Redis Cluster', () => connectCluster()],
] as const)('two replicas on one %s', (_name, connect) => {
  const clients: (Redis | Cluster)[] = [];
  const replicas: RlsSubject[] = [];

  beforeAll(async () => {
    const prefix = uniquePrefix('rls');
    for (let i = 0; i < 2; i++) {
      const client = await connect();
      clients.push(client);
      replicas.push(
        await startRls(
          CONFIG,
          {},
          (clock) =>
            new StoreBackend(
              // 'deny': an unreachable Redis fails the call rather than count in this replica's
              // memory; the long timeout keeps a loaded machine from reading as an outage.
              new RedisStore({ client, prefix, failurePolicy: 'deny', timeout: 10_000, breaker: false }),
              clock,
              'redis',
            ),
          T,
        ),
      );
    }
  }, 60_000);
  afterAll(async () => {
    for (const r of replicas) await r.stop();
    for (const c of clients) c.disconnect();
  });

  it.each(['tenant', 'smooth'])(
    '%s: 200 concurrent requests over both admit exactly the limit',
    async (key) => {
      const limit = key === 'tenant' ? 50 : 30;
      const a = replicas[0]!.client();
      const b = replicas[1]!.client();
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).should('shared', [d(key, 'acme')])),
      );
      const ok = answers.filter((r) => r.overall_code === 'OK').length;
      // Each replica on its own would admit the limit (100 in all): exactly the limit is one shared count.
      expect(ok).toBe(limit);
    },
  );

  it('the next window starts fresh on both', async () => {
    for (const r of replicas) r.clock.now = T + 60_000;
    const r = await replicas[1]!.client().should('shared', [d('tenant', 'acme')]);
    expect(r.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 49 });
  });
});

describe('Redis away', () => {
  it('a call that needs Redis fails UNAVAILABLE (Envoy applies failure_mode_deny); one that needs no counter is answered', async () => {
    const redis = await startRedis();
    const client = await connectRedis(redis.port);
    const rls = await startRls(
      {
        ...CONFIG,
        'open.yaml': 'domain: open\ndescriptors:\n  - key: any\n    rate_limit: { unlimited: true }\n',
      },
      {},
      (clock) => new StoreBackend(new RedisStore({ client, failurePolicy: 'deny' }), clock, 'redis'),
      T,
    );
    try {
      const c = rls.client();
      expect((await c.should('shared', [d('tenant', 'before')])).overall_code).toBe('OK');
      await redis.kill();
      await expect(c.should('shared', [d('tenant', 'after')])).rejects.toMatchObject({
        code: status.UNAVAILABLE,
        details:
          'rate limit backend failed: redis did not answer (a call that timed out may still be counted)',
      });
      expect((await c.should('open', [d('any', 'x')])).overall_code).toBe('OK');
      expect(rls.events.some((e) => e.event === 'decide-error')).toBe(true);
    } finally {
      await rls.stop();
      client.disconnect();
      await redis.stop();
    }
  });
});
