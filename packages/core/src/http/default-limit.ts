import type { Algorithm } from '../algorithm.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';

/** The name of the limit a rate limit gets when its options give none (issue 25 §3). */
export const DEFAULT_LIMIT_NAME = 'default';

/**
 * The algorithm of a rate limit whose options give no limit: 100 requests a minute per key
 * (`byIp()` unless `key` is given), so `app.use(rateLimit())` protects an app. Between the peers'
 * defaults: express-rate-limit's 5 a minute is a login limit that a page and its API calls would
 * hit, @fastify/rate-limit's 1000 a minute hardly slows one client (README.md, "The first five
 * minutes"). A sliding window counter: three numbers per key, and no double burst across a
 * window's boundary as a fixed window allows.
 */
export function defaultAlgorithm(): Algorithm {
  return slidingWindowCounter({ limit: 100, window: '1m' });
}
