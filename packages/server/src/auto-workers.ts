/**
 * The most workers `--workers auto` starts. Every decision runs inside an LMDB write transaction,
 * and LMDB runs one at a time across the workers, so past a few workers they queue for it: on a
 * 16-core machine (issue 36; 100,000 random keys, RL.REDUCE) 2 workers gave 1.50× one worker
 * pipelined and 2.20× unpipelined, 4 gave 1.04× and 2.53×, 8 gave 0.95× and 1.77×. Two is the
 * largest count that no smaller count beat on either load. `--workers N` still starts N.
 */
export const AUTO_WORKERS_MAX = 2;

/** `--workers auto` on a machine where this process may use `cores` cores. */
export function autoWorkers(cores: number): number {
  return Math.max(1, Math.min(cores, AUTO_WORKERS_MAX));
}
