/**
 * Exact under concurrency: several app processes (Express and Fastify) on one Redis, many
 * keep-alive connections, one key. For the algorithms whose admission count is exact within the
 * test (fixed window inside one window, sliding window log, token bucket and GCRA with no refill
 * during the burst), exactly `LIMIT` requests are admitted. Layered limits: a refused request
 * consumes no limit.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  Limiter,
  MemoryStore,
  type Store,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import { RedisStore } from '@sluice/redis';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Cluster, Redis } from '../redis/client-family.js';
import { connectCluster, connectRedis, repeatsIoredis, storeClient } from '../redis/clients.js';
import type { AlgorithmSpec, AppConfig, RouteSpec } from './app-config.js';
import {
  type AppProcess,
  figures,
  hammer,
  keepAlive,
  type PhaseFigures,
  startApp,
  writeResults,
} from './helpers.js';

const LIMIT = 50;
const TEAM_LIMIT = 1_000;
const TOTAL = 4 * LIMIT;
const CONCURRENCY = 24;

/** No refill and no window change within a burst of a few seconds. */
const SPECS: Record<string, AlgorithmSpec> = {
  // Windows are aligned to the epoch: a '1d' window ends at 00:00 UTC, nowhere near a test's seconds.
  'fixed-window': { kind: 'fixed-window', options: { limit: LIMIT, window: '1d' } },
  'sliding-window-log': { kind: 'sliding-window-log', options: { limit: LIMIT, window: '1h' } },
  // One token per 72 s.
  'token-bucket': { kind: 'token-bucket', options: { capacity: LIMIT, refillInterval: '1h' } },
  // Emission interval 72 s, burst LIMIT.
  gcra: { kind: 'gcra', options: { rate: LIMIT, period: '1h' } },
};
const TEAM: AlgorithmSpec = { kind: 'fixed-window', options: { limit: TEAM_LIMIT, window: '1d' } };

function build(spec: AlgorithmSpec): Algorithm {
  const options = spec.options as never;
  if (spec.kind === 'fixed-window') return fixedWindow(options);
  if (spec.kind === 'sliding-window-log') return slidingWindowLog(options);
  if (spec.kind === 'token-bucket') return tokenBucket(options);
  return gcra(options);
}

/**
 * The routes every app serves on one backend: one per algorithm, and two layered ones. These tests
 * assert exact admission, not latency: a generous store timeout keeps a loaded machine from
 * turning a slow reply into the failure policy's answer.
 */
function routes(backend: string): RouteSpec[] {
  const timeout = 2_000;
  return [
    ...Object.entries(SPECS).map(([name, algorithm]) => ({
      path: `/${backend}/${name}`,
      backend,
      timeout,
      limits: [{ name, key: 'x-user', algorithm }],
    })),
    // Per-user and per-team limits on different keys (different Cluster slots).
    {
      path: `/${backend}/layered`,
      backend,
      timeout,
      limits: [
        { name: 'user', key: 'x-user', algorithm: SPECS['fixed-window']! },
        { name: 'team', key: 'x-team', algorithm: TEAM },
      ],
    },
    // Both limits on one key (one Cluster slot, one script).
    {
      path: `/${backend}/layered-one-key`,
      backend,
      timeout,
      limits: [
        { name: 'user', key: 'x-user', algorithm: SPECS.gcra! },
        { name: 'team', key: 'x-user', algorithm: TEAM },
      ],
    },
  ];
}

const results: Record<string, PhaseFigures & { leftover?: number }> = {};
afterAll(() =>
  writeResults('concurrency', { limit: LIMIT, total: TOTAL, concurrency: CONCURRENCY, results }),
);

interface Target {
  /** Ports of the app servers sharing the store. */
  ports: number[];
  /** Peeks the limits of a route as the apps stored them. */
  peek(limits: { name: string; algorithm: Algorithm }[], keys: string[]): Promise<Decision>;
}

/** Reads limits as the adapters store them: Limiter binds each limit's name, as they do. */
function peeker(store: Store) {
  return (limits: { name: string; algorithm: Algorithm }[], keys: string[]) =>
    Promise.resolve(new Limiter({ limits, store }).peek(keys));
}

/**
 * The same assertions on every backend. On Cluster, layered limits on two user keys span two slots:
 * a refused request's units are refunded in the slot that admitted it.
 */
function exactSuite(label: string, target: () => Target, tag = label) {
  const agent = keepAlive(CONCURRENCY);
  afterAll(() => agent.destroy());
  const leftovers: { layered?: number; oneKey?: number } = {};

  for (const [name, spec] of Object.entries(SPECS)) {
    it(`${name}: exactly the limit is admitted`, async () => {
      const user = `u-${randomUUID()}`;
      const { ports, peek } = target();
      const samples = await hammer(ports, `/${label}/${name}`, { 'x-user': user }, TOTAL, CONCURRENCY, agent);
      const result = figures(samples);
      results[`${tag}/${name}`] = result;
      expect(result).toMatchObject({
        requests: TOTAL,
        answered: TOTAL,
        admitted: LIMIT,
        limited: TOTAL - LIMIT,
      });
      expect((await peek([{ name, algorithm: build(spec) }], [user])).remaining).toBe(0);
    });
  }

  it('layered limits on two keys: exactly the limit admitted, the team limit holds only admitted requests', async () => {
    const user = `u-${randomUUID()}`;
    const team = `t-${randomUUID()}`;
    const { ports, peek } = target();
    const samples = await hammer(
      ports,
      `/${label}/layered`,
      { 'x-user': user, 'x-team': team },
      TOTAL,
      CONCURRENCY,
      agent,
    );
    const result = figures(samples);
    const decision = await peek(
      [
        { name: 'user', algorithm: build(SPECS['fixed-window']!) },
        { name: 'team', algorithm: build(TEAM) },
      ],
      [user, team],
    );
    const leftover = TEAM_LIMIT - decision.limits[1]!.remaining - LIMIT;
    results[`${tag}/layered`] = { ...result, leftover };
    expect(result).toMatchObject({
      requests: TOTAL,
      answered: TOTAL,
      admitted: LIMIT,
      limited: TOTAL - LIMIT,
    });
    expect(decision.limits[0]!.remaining).toBe(0);
    // Units consumed from the team limit beyond the admitted requests: none.
    leftovers.layered = leftover;
    expect(leftover).toBe(0);
  });

  it('layered limits on one key: exactly the limit admitted, the other limit holds only admitted requests', async () => {
    const user = `u-${randomUUID()}`;
    const { ports, peek } = target();
    const samples = await hammer(
      ports,
      `/${label}/layered-one-key`,
      { 'x-user': user },
      TOTAL,
      CONCURRENCY,
      agent,
    );
    const result = figures(samples);
    const decision = await peek(
      [
        { name: 'user', algorithm: build(SPECS.gcra!) },
        { name: 'team', algorithm: build(TEAM) },
      ],
      [user, user],
    );
    const leftover = TEAM_LIMIT - decision.limits[1]!.remaining - LIMIT;
    results[`${tag}/layered-one-key`] = { ...result, leftover };
    expect(result).toMatchObject({
      requests: TOTAL,
      answered: TOTAL,
      admitted: LIMIT,
      limited: TOTAL - LIMIT,
    });
    expect(decision.limits[0]!.remaining).toBe(0);
    leftovers.oneKey = leftover;
    expect(leftover).toBe(0);
  });

  it('layered limits on one user key leave nothing behind (the limit name is outside the hash tag: one slot)', () => {
    expect(leftovers.oneKey).toBe(0);
  });

  it('layered limits on two keys leave nothing behind (on Cluster: two slots, refunded)', () => {
    expect(leftovers.layered).toBe(0);
  });
}

describe('three app processes (Express, Fastify, Express) on one Redis', () => {
  const prefix = `rel:conc:${randomUUID().slice(0, 8)}:`;
  let apps: AppProcess[] = [];
  let redis: Redis;
  let cluster: Cluster;

  beforeAll(async () => {
    redis = await connectRedis();
    cluster = await connectCluster();
    const config = (adapter: AppConfig['adapter']): AppConfig => ({
      adapter,
      prefix,
      backends: {
        standalone: { kind: 'redis', port: inject('redisPort') },
        cluster: { kind: 'cluster', ports: inject('redisClusterPorts') },
      },
      routes: [...routes('standalone'), ...routes('cluster')],
    });
    apps = await Promise.all(
      (['express', 'fastify', 'express'] as const).map((adapter) => startApp(config(adapter))),
    );
  });
  afterAll(async () => {
    for (const app of apps) {
      const stats = await app.stats();
      expect(stats.unhandled).toEqual([]);
      expect(stats.uncaught).toEqual([]);
      // No store call failed: every decision came from Redis, none from the failure policy.
      expect(Object.values(stats.storeErrors).every((n) => n === 0)).toBe(true);
    }
    await Promise.all(apps.map((app) => app.stop()));
    redis?.disconnect();
    cluster?.disconnect();
  });

  describe('standalone', () => {
    exactSuite('standalone', () => ({
      ports: apps.map((app) => app.port),
      peek: peeker(new RedisStore({ client: storeClient(redis), prefix, timeout: 2_000 })),
    }));
  });
  describe('Cluster', () => {
    exactSuite('cluster', () => ({
      ports: apps.map((app) => app.port),
      peek: peeker(new RedisStore({ client: storeClient(cluster), prefix, timeout: 2_000 })),
    }));

    it('through Limiter, layered limits on one user key share a slot: exact, and nothing left behind', async () => {
      // What the README promises, without the adapters' name prefix: three clients, one key.
      const clients = await Promise.all([connectCluster(), connectCluster(), connectCluster()]);
      const limits = [
        { name: 'user', algorithm: build(SPECS.gcra!) },
        { name: 'team', algorithm: build(TEAM) },
      ];
      // The same generous timeout as the apps' routes: the default 100 ms, missed on a loaded
      // machine, hands the call to the failure policy (each process then admitted its own 50).
      const limiters = clients.map(
        (client) =>
          new Limiter({
            limits,
            store: new RedisStore({ client: storeClient(client), prefix, timeout: 2_000 }),
          }),
      );
      const key = `direct-${randomUUID()}`;
      try {
        const decisions = await Promise.all(
          Array.from(
            { length: TOTAL },
            (_, i) => limiters[i % limiters.length]!.check(key) as Promise<Decision>,
          ),
        );
        expect(decisions.filter((d) => d.allowed)).toHaveLength(LIMIT);
        const after = (await limiters[0]!.peek(key)) as Decision;
        expect(after.limits.map((d) => d.remaining)).toEqual([0, TEAM_LIMIT - LIMIT]);
      } finally {
        for (const client of clients) client.disconnect();
      }
    });
  });
});

// In process on a memory store: the same in every client project, run once (project ioredis).
describe.skipIf(repeatsIoredis.withoutRedis)('memory store, one process', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
  });

  async function expressServer(store: MemoryStore): Promise<number> {
    const app = express();
    for (const route of routes('memory')) {
      const limits = route.limits.map((limit) => ({
        name: limit.name,
        algorithm: build(limit.algorithm),
        key: (req: unknown, access: { header(req: unknown, name: string): string | undefined }) =>
          access.header(req, limit.key),
      }));
      app.get(route.path, rateLimit({ limits, store }), (_req, res) => {
        res.json({ ok: true });
      });
    }
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.push(server);
    return (server.address() as AddressInfo).port;
  }

  async function fastifyServer(store: MemoryStore): Promise<number> {
    const app = Fastify();
    await app.register(sluice, { global: false });
    for (const route of routes('memory')) {
      const limits = route.limits.map((limit) => ({
        name: limit.name,
        algorithm: build(limit.algorithm),
        key: (req: unknown, access: { header(req: unknown, name: string): string | undefined }) =>
          access.header(req, limit.key),
      }));
      app.get(route.path, { onRequest: app.rateLimit({ limits, store }) }, async () => ({ ok: true }));
    }
    await app.listen({ port: 0, host: '127.0.0.1' });
    servers.push(app.server);
    return (app.server.address() as AddressInfo).port;
  }

  for (const adapter of ['express', 'fastify'] as const) {
    describe(adapter, () => {
      const store = new MemoryStore();
      let port = 0;
      beforeAll(async () => {
        port = adapter === 'express' ? await expressServer(store) : await fastifyServer(store);
      });
      exactSuite('memory', () => ({ ports: [port], peek: peeker(store) }), `memory-${adapter}`);
    });
  }
});
