import { MeterProvider, type MetricData } from '@opentelemetry/sdk-metrics';
import { fixedWindow, MemoryStore, type Store, UtilizationShedder } from '@sluice/core';
import { SluiceMetrics } from '@sluice/otel';
import { RedisStore } from '@sluice/redis';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { subjects } from '../adapters/subjects.js';
import { connectCluster, connectRedis, uniquePrefix } from '../redis/clients.js';
import { TestReader } from './test-reader.js';

/** A reader collected on demand: the SDK's own aggregation, read the way an exporter reads it. */
const standalone = await connectRedis();
const cluster = await connectCluster();
afterAll(() => {
  standalone.disconnect();
  cluster.disconnect();
});

let reader: TestReader;
let provider: MeterProvider;
beforeEach(() => {
  reader = new TestReader();
  provider = new MeterProvider({ readers: [reader] });
});

const collect = (): Promise<Map<string, MetricData>> => reader.byName();

/** Each data point of a counter or gauge as `attributes → value`, attributes in a stable text. */
function points(metric: MetricData | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const point of metric?.dataPoints ?? []) {
    const label = Object.entries(point.attributes)
      .map(([k, v]) => `${k.replace('sluice.', '')}=${String(v)}`)
      .join(',');
    out[label] = point.value;
  }
  return out;
}

const stores: readonly (readonly [string, () => Store])[] = [
  ['MemoryStore', () => new MemoryStore({ clock: () => 0 })],
  [
    'Redis',
    () =>
      new RedisStore({
        client: standalone,
        prefix: uniquePrefix('otel'),
        clock: () => 0,
        breaker: false,
        timeout: 5_000,
      }),
  ],
  [
    'Redis Cluster',
    () =>
      new RedisStore({
        client: cluster,
        prefix: uniquePrefix('otel'),
        clock: () => 0,
        breaker: false,
        timeout: 5_000,
      }),
  ],
];

for (const subject of subjects.filter((s) => s.name === 'express 5' || s.name === 'fastify')) {
  for (const [storeName, makeStore] of stores) {
    describe(`@sluice/otel: ${subject.name} on ${storeName}`, () => {
      it('counts every decision by policy, outcome, reason and shadow, and times the store', async () => {
        const telemetry = new SluiceMetrics({ meter: provider.getMeter('test') });
        const store = makeStore();
        const app = await subject.build({
          options: {
            limits: [
              { name: 'login', algorithm: fixedWindow({ limit: 2, window: '10s' }), block: '1m' },
              { name: 'trial', algorithm: fixedWindow({ limit: 1, window: '10s' }), enforce: false },
            ],
            store: telemetry.timeStore(store, 'main'),
            onDecision: telemetry.onDecision,
          },
          routes: [{ method: 'GET', path: '/' }],
        });
        try {
          const statuses = [];
          for (let i = 0; i < 4; i++) statuses.push((await app.request('GET', '/')).status);
          expect(statuses).toEqual([200, 200, 429, 429]);
          const metrics = await collect();
          expect(points(metrics.get('sluice.decisions'))).toEqual({
            'policy=login,outcome=allowed,reason=none,shadow=false': 2,
            'policy=login,outcome=refused,reason=rate-limited,shadow=false': 1,
            'policy=login,outcome=refused,reason=blocked,shadow=false': 1,
            // The shadow limit admits the first request only, then reports what it would do (a
            // refusal) without refusing: requests 3 and 4 were refused by login, not by trial.
            'policy=trial,outcome=allowed,reason=none,shadow=true': 1,
            'policy=trial,outcome=refused,reason=rate-limited,shadow=true': 3,
          });
          const latency = metrics.get('sluice.store.duration')!;
          expect(latency.descriptor.unit).toBe('ms');
          expect(latency.dataPoints).toHaveLength(1);
          expect(latency.dataPoints[0]!.attributes).toEqual({
            'sluice.store': 'main',
            'sluice.operation': 'consume',
          });
          expect((latency.dataPoints[0]!.value as { count: number }).count).toBe(4);
        } finally {
          telemetry.close();
          await app.close();
          await store.shutdown();
        }
      });
    });
  }
}

describe('@sluice/otel: observed gauges', () => {
  it("reads the breaker's state and the deny cache's hits from a RedisStore", async () => {
    const now = 1_000_000;
    const store = new RedisStore({
      client: standalone,
      prefix: uniquePrefix('otel'),
      denyCache: 10,
      clock: () => now,
      timeout: 5_000,
    });
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), stores: { redis: store } });
    const call = { algorithm: fixedWindow({ limit: 1, window: '1m' }), key: 'k', cost: 1, policy: 'p' };
    for (let i = 0; i < 4; i++) await store.consume([call], undefined);
    const metrics = await collect();
    expect(points(metrics.get('sluice.breaker.state'))).toEqual({ 'store=redis': 0 });
    // Admitted, refused by Redis (and kept), then twice from the deny cache.
    expect(points(metrics.get('sluice.deny_cache.hits'))).toEqual({ 'store=redis': 2 });
    telemetry.close();
    await store.shutdown();
  });

  it('reports an open breaker as 2, and reads nothing once closed', async () => {
    let reads = 0;
    const observed = {
      get breakerState() {
        reads++;
        return 'open' as const;
      },
    };
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), stores: { a: observed } });
    expect(points((await collect()).get('sluice.breaker.state'))).toEqual({ 'store=a': 2 });
    expect(reads).toBe(1);
    telemetry.close();
    await collect();
    expect(reads).toBe(1);
  });

  it("reads a utilization shedder's pressure and shed fractions", async () => {
    let signal = 0;
    const shedder = new UtilizationShedder({
      name: 'cpu',
      signal: () => signal,
      timer: false,
      clock: () => 0,
      delay: '1s',
      ramp: '2s',
      random: () => 0.5,
    });
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), shedders: [shedder] });
    signal = 1;
    for (let t = 500; t <= 3000; t += 500) shedder.sample(t);
    const metrics = await collect();
    expect(points(metrics.get('sluice.shedder.pressure'))).toEqual({ 'shedder=cpu': shedder.state.pressure });
    expect(shedder.state.pressure).toBeGreaterThan(0);
    const fractions = points(metrics.get('sluice.shedder.shed_fraction'));
    expect(fractions).toEqual(
      Object.fromEntries(
        Object.entries(shedder.fractions()).map(([p, v]) => [`shedder=cpu,priority=${p}`, v]),
      ),
    );
    expect(Object.values(fractions).some((v) => (v as number) > 0)).toBe(true);
    telemetry.close();
    shedder.close();
  });

  it('refuses unknown options with a coded error', () => {
    expect(() => new SluiceMetrics({ metre: 1 } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION', option: 'metre' }),
    );
  });
});
