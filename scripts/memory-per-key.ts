/**
 * Measures the heap a MemoryStore holds per key, for each algorithm: 100,000 keys written, heap
 * read after a full GC before and after. Run: `node --expose-gc --import tsx scripts/memory-per-key.ts`.
 * Compares with `MemoryStore.bytesOf`, the estimate the store bounds `maxBytes` by, which must be
 * at least the measured size (the README's per-key table comes from this script).
 */
import {
  type Algorithm,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';

const KEYS = 100_000;
const T0 = 1_763_786_000_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const subjects: [string, Algorithm, number][] = [
  ['tokenBucket (continuous)', tokenBucket({ capacity: 10, refillInterval: '1m' }), 1],
  ['tokenBucket (stepped)', tokenBucket({ capacity: 10, refillInterval: '1m', refill: 'stepped' }), 1],
  ['gcra', gcra({ rate: 10, period: '1m' }), 1],
  ['leakyBucketQueue', leakyBucketQueue({ rate: 10, period: '1m', queue: 10 }), 1],
  ['fixedWindow', fixedWindow({ limit: 10, window: '1m' }), 1],
  ['slidingWindowCounter (precision 1)', slidingWindowCounter({ limit: 10, window: '1m' }), 1],
  [
    'slidingWindowCounter (precision 60)',
    slidingWindowCounter({ limit: 10, window: '1m', precision: 60 }),
    1,
  ],
  [
    'slidingWindowCounter (precision 1000)',
    slidingWindowCounter({ limit: 10, window: '1m', precision: 1000 }),
    1,
  ],
  ['slidingWindowLog (1 request)', slidingWindowLog({ limit: 100, window: '1m' }), 1],
  ['slidingWindowLog (100 requests, 100 ms)', slidingWindowLog({ limit: 100, window: '1m' }), 100],
];

for (const [label, algorithm, requests] of subjects) {
  const store = new MemoryStore({ maxKeys: KEYS * 2, maxBytes: 2 ** 40 });
  const limiter = new Limiter({ algorithm, store });
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < KEYS; i++) {
    const key = `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    for (let r = 0; r < requests; r++) limiter.check(key, { now: T0 + r });
  }
  gc();
  const measured = (process.memoryUsage().heapUsed - before) / KEYS;
  const estimated = store.bytes / KEYS;
  console.log(
    `${label.padEnd(42)} measured ${measured.toFixed(0).padStart(6)} B/key, estimated ${estimated.toFixed(0).padStart(6)} B/key`,
  );
  store.shutdown();
}
