import type { ALGORITHM_KINDS, AlgorithmFactoryName, AlgorithmKind } from './algorithm-kinds.js';
import { fixedWindow } from './algorithms/fixed-window.js';
import { gcra } from './algorithms/gcra.js';
import { leakyBucketQueue } from './algorithms/leaky-bucket-queue.js';
import { slidingWindowCounter } from './algorithms/sliding-window-counter.js';
import { slidingWindowLog } from './algorithms/sliding-window-log.js';
import { tokenBucket } from './algorithms/token-bucket.js';

/**
 * Each kind's factory, by its name (a mapped type: a kind added to `ALGORITHM_KINDS` must be here),
 * for code that builds algorithms by name (the playground).
 */
export const ALGORITHM_FACTORIES = {
  tokenBucket,
  gcra,
  fixedWindow,
  slidingWindowLog,
  slidingWindowCounter,
  leakyBucketQueue,
} as const satisfies { readonly [K in AlgorithmKind as (typeof ALGORITHM_KINDS)[K]['factory']]: unknown };

const BY_FUNCTION = new Map<unknown, AlgorithmFactoryName>(
  Object.entries(ALGORITHM_FACTORIES).map(([name, factory]) => [factory, name as AlgorithmFactoryName]),
);

/**
 * The factory's name when `value` is one of the built-in factories itself (`fixedWindow` where
 * `fixedWindow({ … })` was meant: plain JavaScript does not catch it, and an adapter would take
 * the factory for a plan per request and call it with each request).
 */
export function factoryName(value: unknown): AlgorithmFactoryName | undefined {
  return typeof value === 'function' ? BY_FUNCTION.get(value) : undefined;
}
