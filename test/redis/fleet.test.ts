import { fileURLToPath } from 'node:url';
import { ConcurrencyLimiter, FleetShedder, type Lease } from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { leaseKeys } from '../../packages/redis/src/key-escape.js';
import { ChildNode } from './child-node.js';
import type { Cluster, Redis } from './client-family.js';
import { connectCluster, connectRedis, uniquePrefix } from './clients.js';

const START = 1_700_000_000_000;
const errors: RedisStoreErrorEvent[] = [];

type Client = Redis | Cluster;

/** Two connections, as two app processes would have: what one store caches, the other cannot see. */
const standalone: [Client, Client] = [await connectRedis(), await connectRedis()];
const cluster: [Client, Client] = [await connectCluster(), await connectCluster()];
afterAll(() => {
  for (const client of [...standalone, ...cluster]) client.disconnect();
});

function stores(clients: [Client, Client]): [RedisStore, RedisStore] {
  const prefix = uniquePrefix('fleet');
  const store = (client: Client) =>
    new RedisStore({
      client,
      prefix,
      timeout: 5_000,
      failurePolicy: 'deny',
      breaker: false,
      onError: (event) => errors.push(event),
    });
  return [store(clients[0]), store(clients[1])];
}

const subjects: readonly [string, [Client, Client]][] = [
  ['standalone', standalone],
  ['cluster', cluster],
];

describe.each(subjects)('ConcurrencyLimiter and FleetShedder on RedisStore (%s)', (_name, clients) => {
  it('two limiters on two connections share one limit per key; keys are independent', async () => {
    const [one, two] = stores(clients);
    const a = new ConcurrencyLimiter({ limit: 3, store: one });
    const b = new ConcurrencyLimiter({ limit: 3, store: two });
    const held: Lease[] = [];
    for (const limiter of [a, b, a]) held.push(await limiter.acquire('token:{x}', { now: START }));
    expect(held.map((l) => l.decision.remaining)).toEqual([2, 1, 0]);
    expect((await b.acquire('token:{x}', { now: START + 1 })).decision).toMatchObject({
      allowed: false,
      reason: 'concurrency',
      policy: 'concurrency',
      retryAfter: 1_000,
    });
    // Another key (another hash slot on a Cluster) is not touched.
    expect((await b.acquire('token:{y}', { now: START + 1 })).decision).toMatchObject({ remaining: 2 });
    // A slot freed by one process is taken by the other.
    expect(await held[0]!.release(START + 2)).toBe(true);
    expect((await b.acquire('token:{x}', { now: START + 3 })).decision).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect(await held[0]!.release(START + 4)).toBe(false);
    expect(errors).toEqual([]);
  });

  it('fleet shedder: critical traffic is still admitted while non-critical saturates its share', async () => {
    const [one, two] = stores(clients);
    const shedders = [one, two].map((store) => new FleetShedder({ budget: 10, store, random: () => 0.5 }));
    const held: Lease[] = [];
    let low = 0;
    for (let i = 0; i < 20; i++) {
      const lease = await shedders[i % 2]!.acquire('low', { now: START + i });
      if (lease.decision.allowed) {
        low++;
        held.push(lease);
      } else {
        expect(lease.decision).toMatchObject({ reason: 'shed', limit: 6, remaining: 0, policy: 'fleet' });
        expect(lease.decision.retryAfter).toBe(3_000);
      }
    }
    expect(low).toBe(6);
    held.push(await shedders[0]!.acquire('normal', { now: START + 30 }));
    held.push(await shedders[1]!.acquire('normal', { now: START + 30 }));
    expect(held.every((lease) => lease.decision.allowed)).toBe(true);
    expect((await shedders[0]!.acquire('normal', { now: START + 31 })).decision).toMatchObject({
      allowed: false,
      reason: 'shed',
      limit: 8,
    });
    const critical = [
      await shedders[1]!.acquire('critical', { now: START + 40 }),
      await shedders[0]!.acquire('critical', { now: START + 41 }),
    ];
    expect(critical.map((lease) => lease.decision)).toMatchObject([
      { allowed: true, limit: 10, remaining: 1 },
      { allowed: true, limit: 10, remaining: 0 },
    ]);
    expect((await shedders[1]!.acquire('critical', { now: START + 42 })).decision).toMatchObject({
      allowed: false,
      reason: 'shed',
    });
    // A low request finishing frees a slot that critical traffic can take, but low cannot.
    expect(await held[0]!.release(START + 50)).toBe(true);
    expect((await shedders[0]!.acquire('low', { now: START + 51 })).decision.allowed).toBe(false);
    expect((await shedders[1]!.acquire('critical', { now: START + 52 })).decision.allowed).toBe(true);
    expect(errors).toEqual([]);
  });
});

// A fleet of app processes ------------------------------------------------------------------------

interface Config {
  ports: number[];
  cluster: boolean;
  prefix: string;
  kind: 'concurrency' | 'fleet';
  limit: number;
  time: 'client' | 'redis';
}

interface Summary {
  allowed: boolean;
  remaining: number;
  reason?: string;
}

const SCRIPT = fileURLToPath(new URL('./fleet-process.ts', import.meta.url));

/** One app process (fleet-process.ts), driven by JSON lines. */
const AppProcess = { start: (config: Config) => ChildNode.start(SCRIPT, config) };

const fleets: [string, Omit<Config, 'prefix' | 'ports'>][] = [
  ['concurrency limiter, standalone', { cluster: false, kind: 'concurrency', limit: 8, time: 'client' }],
  ['fleet shedder, standalone, Redis TIME', { cluster: false, kind: 'fleet', limit: 6, time: 'redis' }],
  ['concurrency limiter, Cluster', { cluster: true, kind: 'concurrency', limit: 7, time: 'client' }],
];

describe('a fleet of two app processes shares one budget exactly', () => {
  it.each(fleets)(
    '%s',
    async (_label, fleet) => {
      const prefix = uniquePrefix('procs');
      const ports = fleet.cluster ? inject('redisClusterPorts') : [inject('redisPort')];
      const config: Config = { ...fleet, ports, prefix };
      const observer = fleet.cluster ? cluster[0] : standalone[0];
      const [set] =
        fleet.kind === 'concurrency'
          ? leaseKeys(prefix, 'concurrency', 'shared')
          : leaseKeys(prefix, 'fleet', 'in-flight');
      const limit = fleet.limit;
      const apps = await Promise.all([AppProcess.start(config), AppProcess.start(config)]);
      try {
        // 1. Both processes ask for the whole budget at once: exactly `limit` are admitted in all,
        //    each admission saw a different count (remaining limit-1 … 0, each once).
        const replies = await Promise.all(
          apps.map((app) => app.send<{ decisions: Summary[] }>({ op: 'acquire', n: limit })),
        );
        const all = replies.flatMap((reply) => reply.decisions);
        const admitted = all.filter((d) => d.allowed);
        expect(admitted).toHaveLength(limit);
        expect(admitted.map((d) => d.remaining).sort((x, y) => x - y)).toEqual(
          Array.from({ length: limit }, (_, i) => i),
        );
        const reason = fleet.kind === 'concurrency' ? 'concurrency' : 'shed';
        expect(all.filter((d) => !d.allowed).every((d) => d.reason === reason)).toBe(true);
        expect(await observer.zcard(set)).toBe(limit);

        // 2. Both processes churn (release one, acquire one) while an observer samples the set:
        //    the count in flight never exceeds the limit.
        let churning = true;
        const churn = Promise.all(
          apps.map((app) =>
            app.send<{ held: number; admitted: number; released: number }>({ op: 'churn', rounds: 60 }),
          ),
        ).finally(() => {
          churning = false;
        });
        let samples = 0;
        let most = 0;
        while (churning) {
          most = Math.max(most, await observer.zcard(set));
          samples++;
        }
        const churned = await churn;
        expect(samples).toBeGreaterThan(5);
        expect(most).toBeLessThanOrEqual(limit);
        // Slots were freed and taken again (every release freed a held lease: the process checks).
        const [first, second] = churned as [(typeof churned)[0], (typeof churned)[0]];
        expect(first.released + second.released).toBeGreaterThanOrEqual(60);
        expect(first.admitted + second.admitted).toBeGreaterThan(0);
        const held = first.held + second.held;
        expect(held).toBe(await observer.zcard(set));
        expect(held).toBeLessThanOrEqual(limit);

        // 3. Saturate again: the processes end up holding exactly the budget between them.
        const refill = await Promise.all(
          apps.map((app) => app.send<{ decisions: Summary[] }>({ op: 'acquire', n: limit })),
        );
        const more = refill.flatMap((reply) => reply.decisions).filter((d) => d.allowed).length;
        expect(held + more).toBe(limit);
        expect(await observer.zcard(set)).toBe(limit);
        expect(apps.map((app) => app.errors)).toEqual(['', '']);
      } finally {
        for (const app of apps) app.stop();
      }
    },
    60_000,
  );
});
