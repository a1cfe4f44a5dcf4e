/**
 * How many workers `--workers auto` starts, and the shards a new directory gets for them. Every
 * decision runs inside an LMDB write transaction, and LMDB runs one at a time per environment
 * across the workers. Measured on 16-core machines (issue 36; 100,000 random keys, RL.REDUCE,
 * pipelined 16 deep on 40 connections / one at a time on 200; `bench/results/server-scale.md`):
 * - over one environment, 2 workers gave 1.43× one worker pipelined and 1.77× unpipelined, 4 gave
 *   1.11× and 2.44×, 8 gave 0.89× and 1.81×: past 2 they queue for the lock;
 * - over 8 shards, 2 workers gave 2.41× and 2.16×, 4 gave 3.20× and 3.01×, 8 gave 3.98× and 4.72×;
 *   in three of four runs every count beat every smaller one (in the fourth, 8 ran 4% under 4
 *   pipelined); 16 shards did no better than 8 (worse at 2 workers).
 * So auto starts a worker per core up to 8 when the directory has shards, and at most 2 on a
 * directory of one environment (one made before shards, or with `--shards 1`). Counts past 8
 * were not measured. `--workers N` still starts N.
 */
export const AUTO_WORKERS_MAX = 8;

/** The most workers auto starts over a directory of one environment. */
export const AUTO_WORKERS_UNSHARDED = 2;

/**
 * The shards a new directory gets when the server starts several workers (`--workers N` with
 * N > 1, or `auto`) and `--shards` is not given. A single worker's new directory gets 1: one
 * process gains nothing from shards, and pays a transaction per shard its turn touches (a
 * single worker pipelined ran 0.87× over 8 shards in the measurement above).
 */
export const WORKER_SHARDS = 8;

/**
 * Whether `--workers` (a count, or `auto` on `cores` cores) starts several workers, known before
 * the directory is opened: `auto` on one core is one process (then a new directory gets 1 shard,
 * and the cache stays on); on more it starts at least 2 whatever the directory's shards.
 */
export function severalWorkers(asked: number | 'auto', cores: number): boolean {
  return asked === 'auto' ? cores > 1 : asked > 1;
}

/** `--workers auto` on a machine where this process may use `cores` cores, over `shards` shards. */
export function autoWorkers(cores: number, shards: number): number {
  return Math.max(1, Math.min(cores, shards > 1 ? AUTO_WORKERS_MAX : AUTO_WORKERS_UNSHARDED));
}
