import { describe, expect, it } from 'vitest';
import {
  AUTO_WORKERS_MAX,
  AUTO_WORKERS_UNSHARDED,
  autoWorkers,
  severalWorkers,
} from '../../packages/server/src/auto-workers.js';

// Issue 36: `--workers auto` must never start a count that a smaller count beats. Measured on 16
// cores: over one LMDB environment 4 workers were slower than 2 pipelined and 8 slower than 2 on
// both loads; over 8 shards each count up to 8 beat every smaller one on both loads.
describe('--workers auto', () => {
  it('over shards: one worker per core up to 8, the most measured', () => {
    expect(AUTO_WORKERS_MAX).toBe(8);
    expect([1, 2, 4, 8, 16, 128].map((cores) => autoWorkers(cores, 8))).toEqual([1, 2, 4, 8, 8, 8]);
    expect(autoWorkers(16, 2)).toBe(8);
  });

  it('auto on one core is one process (a new directory of 1 shard, the cache on); on more, several whatever the shards', () => {
    expect(severalWorkers('auto', 1)).toBe(false);
    expect(autoWorkers(1, 8)).toBe(1);
    expect([2, 16].map((cores) => severalWorkers('auto', cores))).toEqual([true, true]);
    expect([2, 16].map((cores) => autoWorkers(cores, 1) > 1)).toEqual([true, true]);
    expect([1, 2].map((n) => severalWorkers(n, 16))).toEqual([false, true]);
  });

  it('over one environment (a directory made before shards, or --shards 1): at most 2', () => {
    expect(AUTO_WORKERS_UNSHARDED).toBe(2);
    expect([1, 2, 4, 16, 128].map((cores) => autoWorkers(cores, 1))).toEqual([1, 2, 2, 2, 2]);
  });
});
