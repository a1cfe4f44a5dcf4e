import { join } from 'node:path';
import { dataDirError, type EnvOwner, shardDirName } from './data-dir.js';
import { openStateEnv, type StateEnv } from './state-env.js';
import { SnapshotReader, type StateReader } from './state-reader.js';
import type { StateTxn, StateWriter } from './state-txn.js';

/**
 * The state split over several LMDB environments, a key's state always in the same one. LMDB runs
 * one write transaction at a time per environment, across processes: with one environment every
 * worker of sluice-server queues for the same lock, and past two workers they spent more time
 * handing it over than deciding (issue 36's 16-core table). With N shards the workers queue per
 * shard, so N transactions can run at once.
 *
 * A key's shard is a hash of its client key (the stored key past its 8-byte prefix digest,
 * stored-key.ts), so every limit, block record and lease set of one client key shares a shard: a
 * layered check on one key, the common case, is one transaction. The hash and the count are part
 * of the stored layout: the count is recorded when the directory is made and never changes
 * (moving keys between shards would be a migration), and {@link shardOf} must never change.
 */

/** The most shards a directory may be split over. */
export const MAX_SHARDS = 64;

/** Where an environment sits among the shards. */
export interface ShardPlace {
  readonly index: number;
  readonly count: number;
}

/** The place of an unsharded environment: every key is its own. */
export const ONLY_SHARD: ShardPlace = { index: 0, count: 1 };

/** Characters of a stored key before the client key: the digest of its prefix (stored-key.ts). */
const PREFIX_CHARS = 8;

/**
 * The shard of a stored key (latin1, one char per byte) among `count`: 32-bit FNV-1a of the
 * client key's bytes, modulo the count. Part of the stored layout: never change it.
 */
export function shardOf(id: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = PREFIX_CHARS; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

/** A key read or written in a shard that is not its own: a bug in the caller's declared keys. */
export function misplaced(id: string, count: number, where: string): never {
  throw new Error(
    `key ${JSON.stringify(id.slice(PREFIX_CHARS, PREFIX_CHARS + 40))} belongs to shard ${shardOf(id, count)} of ${count}, outside ${where}: a job must declare every key it touches`,
  );
}

/**
 * Opens the shards of the state in `dir`: the first is the directory's own environment, which
 * records the count; the others are its `shard-<i>` subdirectories. `shards`: the count asked for,
 * which an existing directory must have been made with (absent: whatever it was made with).
 * A new directory is made with `shards`, else `fresh`.
 */
export function openShards(owner: EnvOwner, dir: string, shards: number | undefined, fresh = 1): StateEnv[] {
  const first = openStateEnv(owner, dir, shards ?? fresh);
  const envs = [first];
  try {
    if (shards !== undefined && first.shards !== shards) {
      throw dataDirError(
        owner,
        dir,
        `was made with ${first.shards} shard${first.shards === 1 ? '' : 's'}, and ${shards} were asked for (the count is fixed when a directory is made: leave it out to use the directory's)`,
      );
    }
    for (let i = 1; i < first.shards; i++) envs.push(openStateEnv(owner, join(dir, shardDirName(i))));
    return envs;
  } catch (err) {
    for (const env of envs) void env.root.close();
    throw err;
  }
}

/**
 * One transaction over several shards' (each a StateTxn of its environment, all locked): every
 * read and write goes to its key's shard. A key of a shard not locked throws.
 */
export class ShardedTxn implements StateWriter {
  constructor(
    /** By shard index; `undefined` for a shard this transaction does not hold. */
    private readonly txs: readonly (StateTxn | undefined)[],
    readonly now: number,
  ) {}

  private of(id: string): StateTxn {
    const index = shardOf(id, this.txs.length);
    return this.txs[index] ?? misplaced(id, this.txs.length, 'the shards this transaction holds');
  }

  read(id: string, now: number): unknown {
    return this.of(id).read(id, now);
  }

  write(id: string, state: unknown, ttl: number, now: number): void {
    this.of(id).write(id, state, ttl, now);
  }

  writeFrom(id: string, state: unknown, ttl: number, at: number): void {
    this.of(id).writeFrom(id, state, ttl, at);
  }
}

/** The latest committed state of every shard, each read from its own key's shard. */
export class ShardedReader implements StateReader {
  private readonly readers: (SnapshotReader | undefined)[];

  constructor(private readonly envs: readonly StateEnv[]) {
    this.readers = new Array(envs.length);
  }

  read(id: string, now: number): unknown {
    const index = shardOf(id, this.envs.length);
    // Each shard's snapshot is renewed when first read (SnapshotReader), not every shard's at once.
    let reader = this.readers[index];
    if (reader === undefined) {
      reader = new SnapshotReader(this.envs[index]!);
      this.readers[index] = reader;
    }
    return reader.read(id, now);
  }
}
