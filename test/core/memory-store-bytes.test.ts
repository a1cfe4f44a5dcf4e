import {
  type Algorithm,
  fixedWindow,
  Limiter,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { T0 } from './helpers.js';

const MiB = 1024 * 1024;

/** Σ bytesOf over the keys held, recomputed from the states the store reports. */
function recount(store: MemoryStore, held: readonly [Algorithm, string][]): number {
  let bytes = 0;
  for (const [algorithm, key] of held) {
    const state = store.inspect(algorithm, key);
    if (state !== undefined) bytes += MemoryStore.bytesOf(key, state);
  }
  return bytes;
}

describe('MemoryStore memory bound (issue 11: a 1M-key flood of precision-1000 counters reached 1 GB)', () => {
  it('regression: a flood of unique sliding-window-counter keys of precision 1000 stays within the default 64 MiB', () => {
    // ~10 KB of heap per key (measured; 16 KB estimated): under maxKeys alone, 100,000 keys held
    // 1 GB. The flood is 6,000 keys, enough to pass the byte bound at 4,096 keys.
    const store = new MemoryStore();
    expect(store.maxBytes).toBe(64 * MiB);
    const algorithm = slidingWindowCounter({ limit: 10, window: '1h', precision: 1000 });
    const limiter = new Limiter({ store, algorithm });
    let perKey = 0;
    for (let i = 0; i < 6000; i++) {
      const key = `ip:10.0.${i >> 8}.${i & 255}`;
      limiter.checkSync(key, { now: T0 + i });
      perKey = Math.max(perKey, MemoryStore.bytesOf(key, store.inspect(algorithm, key)));
    }
    // Counted deterministically: stored keys × their size weight, never heap sampling.
    expect(store.keyCount * perKey).toBeLessThanOrEqual(64 * MiB);
    expect(store.bytes).toBeLessThanOrEqual(64 * MiB);
    expect(store.keyCount).toBeGreaterThan(4000);
    // The newest keys are the ones kept.
    expect(store.inspect(algorithm, 'ip:10.0.23.111')).toBeDefined();
    expect(store.inspect(algorithm, 'ip:10.0.0.0')).toBeUndefined();
  });

  it('maxBytes is an integer ≥ 1024, checked at creation', () => {
    for (const bad of [0, 1023, 1.5e4 + 0.5, Number.NaN, Number.POSITIVE_INFINITY, '1MB']) {
      expect(() => new MemoryStore({ maxBytes: bad as never }), String(bad)).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'maxBytes' }),
      );
    }
  });

  it('every algorithm: a flood of unique keys never holds more than maxBytes', () => {
    const algorithms: Algorithm[] = [
      tokenBucket({ capacity: 5, refillInterval: '1h' }),
      fixedWindow({ limit: 5, window: '1h' }),
      slidingWindowLog({ limit: 50, window: '1h' }),
      slidingWindowCounter({ limit: 5, window: '1h', precision: 60 }),
    ];
    for (const algorithm of algorithms) {
      const store = new MemoryStore({ maxBytes: 200_000 });
      const limiter = new Limiter({ store, algorithm });
      for (let i = 0; i < 3000; i++) {
        // A few requests per key at distinct ms, so that logs grow after their key is written.
        for (let r = 0; r < 3; r++) limiter.checkSync(`flood:${i}`, { now: T0 + i * 10 + r });
        expect(store.bytes, algorithm.kind).toBeLessThanOrEqual(200_000);
      }
      expect(store.inspect(algorithm, 'flood:2999'), algorithm.kind).toBeDefined();
    }
  });

  it('a growing state (a sliding window log) evicts other keys rather than pass maxBytes, and is kept itself', () => {
    const store = new MemoryStore({ maxBytes: 30_000 });
    const small = new Limiter({ store, algorithm: tokenBucket({ capacity: 5, refillInterval: '1h' }) });
    const log = new Limiter({ store, algorithm: slidingWindowLog({ limit: 500, window: '1h' }) });
    for (let i = 0; i < 100; i++) small.checkSync(`small:${i}`, { now: T0 });
    const before = store.keyCount;
    for (let i = 0; i < 500; i++) {
      expect(log.checkSync('busy', { now: T0 + i })).toMatchObject({ allowed: true });
      expect(store.bytes).toBeLessThanOrEqual(30_000);
    }
    expect(store.keyCount).toBeLessThan(before);
    expect((store.inspect(log.limits[0]!.algorithm, 'busy') as number[]).length).toBe(1000);
  });

  it('the byte count is exact: it equals Σ bytesOf over the keys held, through writes, refusals, refunds and eviction', () => {
    const algorithms = [
      fixedWindow({ limit: 2, window: 1000 }),
      slidingWindowLog({ limit: 4, window: 3000 }),
      slidingWindowCounter({ limit: 3, window: 2000, precision: 4 }),
      tokenBucket({ capacity: 3, refillInterval: 60_000 }),
    ];
    fc.assert(
      fc.property(
        fc.integer({ min: 1024, max: 6000 }),
        fc.array(
          fc.record({
            key: fc.integer({ min: 0, max: 25 }),
            which: fc.integer({ min: 0, max: 3 }),
            advance: fc.nat(1500),
            refund: fc.boolean(),
          }),
          { minLength: 1, maxLength: 200 },
        ),
        (maxBytes, steps) => {
          const store = new MemoryStore({ maxBytes });
          const limiters = algorithms.map((algorithm) => new Limiter({ store, algorithm }));
          const held: [Algorithm, string][] = [];
          for (const algorithm of algorithms) for (let k = 0; k <= 25; k++) held.push([algorithm, `k${k}`]);
          let now = T0;
          for (const step of steps) {
            now += step.advance;
            const key = `k${step.key}`;
            const algorithm = algorithms[step.which]!;
            const decision = limiters[step.which]!.checkSync(key, { now });
            if (step.refund && (decision as { allowed: boolean }).allowed)
              store.refund([{ algorithm, key, cost: 1, policy: algorithm.kind }], now);
            expect(store.bytes).toBe(recount(store, held));
            expect(store.bytes).toBeLessThanOrEqual(maxBytes);
          }
        },
      ),
      { numRuns: 200, seed: 20_261_123 },
    );
  });
});
