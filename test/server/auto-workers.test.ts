import { describe, expect, it } from 'vitest';
import { AUTO_WORKERS_MAX, autoWorkers } from '../../packages/server/src/auto-workers.js';

// Issue 36: `--workers auto` must never start a count that a smaller count beats. Measured on 16
// cores, 4 workers were slower than 2 pipelined and 8 slower than 2 on both loads (LMDB's one
// write transaction at a time), so auto stops at 2.
describe('--workers auto', () => {
  it('starts one worker per core up to the largest count no smaller count beat', () => {
    expect(autoWorkers(1)).toBe(1);
    expect(autoWorkers(2)).toBe(2);
    expect(AUTO_WORKERS_MAX).toBe(2);
    expect(autoWorkers(4)).toBe(2);
    expect(autoWorkers(16)).toBe(2);
    expect(autoWorkers(128)).toBe(2);
  });
});
