import { type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import { expect } from 'vitest';

/** A metric reader the tests collect from when they choose (no export interval, nothing exported). */
export class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}

  /** Every metric collected now, by name; a collection error fails the test. */
  async byName(): Promise<Map<string, MetricData>> {
    const { resourceMetrics, errors } = await this.collect();
    expect(errors).toEqual([]);
    const byName = new Map<string, MetricData>();
    for (const scope of resourceMetrics.scopeMetrics)
      for (const m of scope.metrics) byName.set(m.descriptor.name, m);
    return byName;
  }
}
