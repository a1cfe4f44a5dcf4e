import { describe, expect, it } from 'vitest';
import {
  type AimdState,
  aimd,
  aimdParams,
  aimdStart,
  aimdUpdate,
} from '../../../packages/core/src/adaptive/aimd.js';
import { win } from './adaptive-helpers.js';

describe('AIMD (Netflix concurrency-limits AIMDLimit)', () => {
  it('+1 while in flight ≥ limit/2, ×0.9 rounded down on a drop', () => {
    const params = aimdParams({ minLimit: 1 });
    let s: AimdState = aimdStart(params, 0);
    const limits: number[] = [];
    for (const w of [
      win(10, 10), // 2 × 10 ≥ 20 → 21
      win(10, 10), // 2 × 10 < 21 → holds 21
      win(10, 11), // 22 ≥ 21 → 22
      win(10, 22, true), // ⌊22 × 0.9⌋ = ⌊19.8⌋ = 19
      win(undefined, 19, true), // drops only: ⌊19 × 0.9⌋ = ⌊17.1⌋ = 17
    ]) {
      s = aimdUpdate(s, w, params);
      limits.push(s.limit);
    }
    expect(limits).toEqual([21, 21, 22, 19, 17]);
  });

  it('never below 1 nor minLimit (default 20), never above maxLimit (default 200)', () => {
    const low = aimdParams({ initialLimit: 1, minLimit: 1 });
    expect(aimdUpdate(aimdStart(low, 0), win(10, 1, true), low).limit).toBe(1); // max(1, ⌊0.9⌋ = 0)
    const defaults = aimdParams();
    expect(aimdUpdate(aimdStart(defaults, 0), win(10, 20, true), defaults).limit).toBe(20); // 18 → 20
    const top = aimdParams({ initialLimit: 200 });
    expect(aimdUpdate(aimdStart(top, 0), win(10, 200), top).limit).toBe(200);
  });

  it('a request slower than timeout (default 5 s) counts as a drop', () => {
    const c = aimd({ minLimit: 1, windowSamples: 1, minWindow: 1, maxWindow: 1 });
    const slow = c.update(c.start(0, 0), { start: 0, end: 5001, inFlight: 20, dropped: false }, 0);
    expect(c.limit(slow)).toBe(18); // ⌊20 × 0.9⌋
    const justIn = c.update(c.start(0, 0), { start: 0, end: 5000, inFlight: 20, dropped: false }, 0);
    expect(c.limit(justIn)).toBe(21);
  });
});
