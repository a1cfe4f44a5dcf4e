import { type Duration, parseDuration } from '../duration.js';
import { assertUnit } from '../time-range.js';
import { integerOption, requireOption } from '../validate.js';

/** The options of a limit per window (fixed window, sliding window log). */
export interface LimitWindowOptions {
  limit: number;
  window: Duration;
}

/** `limit` (an integer ≥ 1) and `window` (ms, at least the smallest unit of time) of a limit per window. */
export function limitWindow(options: LimitWindowOptions): { limit: number; window: number } {
  const limit = integerOption('limit', requireOption('limit', options.limit));
  const window = parseDuration('window', requireOption('window', options.window));
  assertUnit('window', options.window, window, 'window');
  return { limit, window };
}
