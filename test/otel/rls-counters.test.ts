import { MeterProvider, type MetricData } from '@opentelemetry/sdk-metrics';
import { ErrorCode } from '@sluice/core';
import { SluiceMetrics } from '@sluice/otel';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { d, type RlsSubject, startRls } from '../server/rls-harness.js';
import { TestReader } from './test-reader.js';

// Issue 34, Operations: the rate limit service's per-descriptor counters (envoyproxy/ratelimit's
// `ratelimit.service.rate_limit.<stats key>.{total_hits,over_limit,near_limit,within_limit,
// shadow_mode}`) through @sluice/otel, read by a real MeterProvider from a real service answering
// real gRPC calls.

const CONFIG = {
  'api.yaml': `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: trial
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: client
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: internal
    rate_limit: { unlimited: true }
`,
};

const COUNTERS = {
  'sluice.rls.total_hits': 'totalHits',
  'sluice.rls.over_limit': 'overLimit',
  'sluice.rls.near_limit': 'nearLimit',
  'sluice.rls.within_limit': 'withinLimit',
  'sluice.rls.shadow_mode': 'shadowMode',
} as const;

let reader: TestReader;
let provider: MeterProvider;
let s: RlsSubject | undefined;

beforeEach(() => {
  reader = new TestReader();
  provider = new MeterProvider({ readers: [reader] });
});
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const collect = (): Promise<Map<string, MetricData>> => reader.byName();

/** A metric's points by `service/key`. */
function points(metric: MetricData | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const point of metric?.dataPoints ?? []) {
    out[`${String(point.attributes['sluice.rls.service'])}/${String(point.attributes['sluice.rls.key'])}`] =
      point.value;
  }
  return out;
}

async function hit(domain: string, times: number, ...kv: string[]): Promise<string[]> {
  const c = s!.client();
  const codes: string[] = [];
  for (let i = 0; i < times; i++) codes.push((await c.should(domain, [d(...kv)])).overall_code);
  return codes;
}

describe('@sluice/otel: the rate limit service per descriptor', () => {
  it('counts hits, over, near (past 80%), within and shadow per stats key, as envoyproxy/ratelimit names them', async () => {
    s = await startRls(CONFIG);
    const rls = s.rls;
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), rls: { envoy: rls } });
    expect(await hit('api', 7, 'user', 'u1')).toEqual([...Array(5).fill('OK'), 'OVER_LIMIT', 'OVER_LIMIT']);
    expect(await hit('api', 3, 'trial', 't1')).toEqual(['OK', 'OK', 'OK']);
    await hit('api', 2, 'internal', 'x');
    let byName = await collect();
    // 7 hits on a limit of 5: 5 within, the 5th past 80% (4) near, 2 over.
    expect(points(byName.get('sluice.rls.total_hits'))).toEqual({
      'envoy/api.user': 7,
      'envoy/api.trial': 3,
      'envoy/api.internal': 2,
    });
    expect(points(byName.get('sluice.rls.within_limit'))).toEqual({
      'envoy/api.user': 5,
      'envoy/api.trial': 2,
      'envoy/api.internal': 0,
    });
    expect(points(byName.get('sluice.rls.near_limit'))).toMatchObject({ 'envoy/api.user': 1 });
    expect(points(byName.get('sluice.rls.over_limit'))).toMatchObject({
      'envoy/api.user': 2,
      'envoy/api.trial': 1,
    });
    // Over the limit but let through: shadow mode.
    expect(points(byName.get('sluice.rls.shadow_mode'))).toMatchObject({
      'envoy/api.user': 0,
      'envoy/api.trial': 1,
    });
    // Every instrument says the same as the service's own counters.
    const own = rls.counters();
    for (const [name, field] of Object.entries(COUNTERS)) {
      const metric = byName.get(name)!;
      expect(metric.descriptor.unit).toBe('{hit}');
      for (const [key, counters] of Object.entries(own)) {
        expect(points(metric)[`envoy/${key}`], `${name} ${key}`).toBe(counters[field]);
      }
    }
    // Cumulative across collections.
    await hit('api', 1, 'user', 'u1');
    byName = await collect();
    expect(points(byName.get('sluice.rls.total_hits'))['envoy/api.user']).toBe(8);
    expect(points(byName.get('sluice.rls.over_limit'))['envoy/api.user']).toBe(3);
    telemetry.close();
    await hit('api', 1, 'user', 'u1');
    expect(rls.counters()['api.user']!.totalHits).toBe(9);
    byName = await collect();
    // Closed: no longer read (the SDK keeps the last cumulative value it was given).
    expect(points(byName.get('sluice.rls.total_hits'))['envoy/api.user']).toBe(8);
  });

  it('cardinality stays bounded: past maxStatsKeys no new key is made, and the decisions turned away are counted', async () => {
    s = await startRls(CONFIG, { maxStatsKeys: 2 });
    const rls = s.rls;
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), rls: { envoy: rls } });
    for (const client of ['a', 'b', 'c', 'd']) await hit('api', 1, 'client', client);
    const byName = await collect();
    // detailed_metric mints a key per value; the first two were kept.
    expect(points(byName.get('sluice.rls.total_hits'))).toEqual({
      'envoy/api.client_a': 1,
      'envoy/api.client_b': 1,
    });
    const dropped = byName.get('sluice.rls.stats_dropped')!;
    expect(dropped.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'sluice.rls.service': 'envoy' }, 2],
    ]);
    telemetry.close();
  });

  it('rls must be services by name', () => {
    expect(() => new SluiceMetrics({ rls: { envoy: 42 as never } })).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_OPTION,
        message: expect.stringContaining('rls.envoy'),
      }),
    );
    expect(() => new SluiceMetrics({ rls: [] as never })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION }),
    );
  });
});
