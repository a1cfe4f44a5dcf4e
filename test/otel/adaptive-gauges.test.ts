import { MeterProvider, type MetricData } from '@opentelemetry/sdk-metrics';
import { AdaptiveConcurrency, aimd, ErrorCode, type LimitController } from '@sluice/core';
import { SluiceMetrics } from '@sluice/otel';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestReader } from './test-reader.js';

/** A reader collected on demand: the SDK's own aggregation, read the way an exporter reads it. */
let reader: TestReader;
let provider: MeterProvider;
beforeEach(() => {
  reader = new TestReader();
  provider = new MeterProvider({ readers: [reader] });
});

const collect = (): Promise<Map<string, MetricData>> => reader.byName();

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

/** Limit `limit`, no-load RTT 42 ms once one sample is in. */
function steady(limit: number): LimitController<number> {
  return {
    kind: 'aimd',
    minLimit: 1,
    maxLimit: limit,
    start: () => 0,
    update: (state) => state + 1,
    limit: () => limit,
    rttNoLoad: (state) => (state === 0 ? undefined : 42),
  };
}

describe('@sluice/otel: adaptive concurrency gauges', () => {
  it('observes the limit, in flight, the no-load RTT (once known) and each partition', async () => {
    const limiter = new AdaptiveConcurrency({
      controller: steady(10),
      partitions: { critical: 0.8, low: 0.2 },
      name: 'api',
    });
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), adaptive: [limiter] });
    const a = limiter.acquire('critical', { now: 0 });
    limiter.acquire('critical', { now: 0 });
    limiter.acquire('low', { now: 0 });
    let byName = await collect();
    expect(points(byName.get('sluice.adaptive.limit'))).toEqual({ 'limiter=api': 10 });
    expect(points(byName.get('sluice.adaptive.in_flight'))).toEqual({ 'limiter=api': 3 });
    expect(points(byName.get('sluice.adaptive.rtt_noload'))).toEqual({});
    expect(points(byName.get('sluice.adaptive.partition.in_flight'))).toEqual({
      'limiter=api,priority=critical': 2,
      'limiter=api,priority=low': 1,
    });
    expect(points(byName.get('sluice.adaptive.partition.limit'))).toEqual({
      'limiter=api,priority=critical': 8,
      'limiter=api,priority=low': 2,
    });
    a.release(30);
    byName = await collect();
    expect(points(byName.get('sluice.adaptive.in_flight'))).toEqual({ 'limiter=api': 2 });
    expect(points(byName.get('sluice.adaptive.rtt_noload'))).toEqual({ 'limiter=api': 42 });
    expect(byName.get('sluice.adaptive.rtt_noload')?.descriptor.unit).toBe('ms');
    telemetry.close();
  });

  it('follows the limit as the controller moves it; no partition points without partitions', async () => {
    const limiter = new AdaptiveConcurrency({
      controller: aimd({ initialLimit: 10, minLimit: 1, windowSamples: 1, minWindow: 1, maxWindow: 1 }),
    });
    const telemetry = new SluiceMetrics({ meter: provider.getMeter('test'), adaptive: [limiter] });
    for (let t = 0; t <= 30; t += 10)
      limiter.acquire(undefined, { now: t }).release({ now: t, dropped: true });
    const byName = await collect();
    expect(points(byName.get('sluice.adaptive.limit'))).toEqual({ 'limiter=adaptive': limiter.limit });
    expect(limiter.limit).toBeLessThan(10);
    expect(points(byName.get('sluice.adaptive.partition.in_flight'))).toEqual({});
    telemetry.close();
  });

  it('refuses anything but AdaptiveConcurrency instances, by name', () => {
    expect(() => new SluiceMetrics({ adaptive: [{}] as never })).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_OPTION,
        message: expect.stringContaining('adaptive'),
      }),
    );
  });
});
