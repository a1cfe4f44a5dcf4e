import type { PlaygroundConfig } from '../sim/config.js';

/**
 * What the page shows with no state in its URL: four algorithms at "10 per second" side by side,
 * against a boundary attack on the fixed window, bursts and steady traffic above the limit.
 */
export const DEFAULT_CONFIG: PlaygroundConfig = {
  mode: 'side-by-side',
  limits: [
    { algorithm: 'fixedWindow', limit: 10, window: '1s' },
    { algorithm: 'slidingWindowLog', limit: 10, window: '1s' },
    { algorithm: 'tokenBucket', capacity: 10, refillInterval: '1s' },
    { algorithm: 'leakyBucketQueue', rate: 10, period: '1s', queue: 10 },
  ],
  traffic: [
    { pattern: 'boundary', window: '1s', count: 10, spread: '100ms', repeat: 2, gap: 3 },
    { pattern: 'steady', rate: 14, start: '8s', duration: '6s' },
  ],
  headers: 'ietf',
};

/** A new limit's algorithm, and a new traffic source's pattern. */
export const NEW_LIMIT = 'tokenBucket' as const;
export const NEW_SOURCE = 'steady' as const;
