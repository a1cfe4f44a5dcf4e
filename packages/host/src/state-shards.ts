import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  dataDirError,
  ENV_FILES,
  type EnvOwner,
  prepareDataDir,
  shardDirIndex,
  shardDirName,
} from './data-dir.js';
import { misplaced, shardOf } from './shard-of.js';
import { entryCount, openStateEnv, type StateEnv } from './state-env.js';
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

/**
 * Opens the shards of the state in `dir`: the first is the directory's own environment, which
 * records the count; the others are its `shard-<i>` subdirectories, each recording its index and
 * the count. `shards`: the count asked for, which an existing directory must have been made with
 * (absent: whatever it was made with). A new directory is made with `shards`, else `fresh`.
 *
 * A new directory's other shards are made before its first, so that a first environment that
 * records N shards always has them: a start cut short leaves shard directories only, which the
 * next start adopts if they record the same count. Refused, with nothing made: a shard missing
 * from a directory made earlier (its limits would restart silently), a shard directory that
 * records another place (another layout's, after the first environment was deleted), and a
 * shard directory past the count. Shards with keys are refused as "the first environment lost"
 * only if it is still missing once they are seen: several processes start at once on a new
 * directory (PM2, cluster), and one that looked before another finished making it finds the
 * other's keys in the shards by then.
 */
export function openShards(owner: EnvOwner, dir: string, shards: number | undefined, fresh = 1): StateEnv[] {
  prepareDataDir(owner, dir);
  const first = join(dir, ENV_FILES[0]!);
  let made = !existsSync(first);
  // Shard directories without a first environment: a first start cut short after making them, or
  // a first environment lost. Their count stands unless one is asked for.
  const found = made
    ? readdirSync(dir)
        .map(shardDirIndex)
        .filter((index) => index !== undefined)
        .sort((a, b) => a - b)
    : [];
  const wanted = shards ?? (found.length > 0 ? found[found.length - 1]! + 1 : fresh);
  const envs: StateEnv[] = [];
  const refuse = (problem: string, advice = 'remove it, or start on a new directory') => {
    throw dataDirError(owner, dir, problem, advice);
  };
  const open = (index: number, count: number, mayBeNew: boolean): StateEnv => {
    const sub = join(dir, shardDirName(index));
    if (!mayBeNew && !existsSync(join(sub, ENV_FILES[0]!))) {
      refuse(
        `was made with ${count} shards, and ${shardDirName(index)} is missing (its keys' limits would restart)`,
        'restore it, or start on a new directory',
      );
    }
    const env = openStateEnv(owner, sub, { index, count });
    envs[index] = env;
    if (env.place.index !== index || env.place.count !== count) {
      refuse(
        `holds ${shardDirName(index)} recording shard ${env.place.index} of ${env.place.count}, not shard ${index} of ${count} (another layout's)`,
      );
    }
    return env;
  };
  const plural = (n: number) => `${n} shard${n === 1 ? '' : 's'}`;
  try {
    if (made) {
      // No first environment: a new directory, or a first start cut short after making the other
      // shards (empty then). Shard directories holding keys mean the first was lost: refused, and
      // the ones found are checked before anything is made.
      const past = found.find((index) => index >= wanted);
      if (past !== undefined) {
        refuse(
          `holds ${shardDirName(past)} but no first environment (${ENV_FILES[0]}), and ${plural(wanted)} ${wanted === 1 ? 'was' : 'were'} asked for`,
        );
      }
      for (const index of found) {
        if (entryCount(open(index, wanted, true)) > 0) {
          // Another process starting at the same moment may have made the directory since it was
          // looked at, and its keys are in the shards already: the first environment is there now.
          // It is linked into place after every other shard is made (state-env.ts), so it is whole.
          if (existsSync(first)) {
            made = false;
            break;
          }
          refuse(
            `holds ${shardDirName(index)} with keys but no first environment (${ENV_FILES[0]}): the keys of the first shard are gone`,
            `restore ${ENV_FILES[0]} and ${ENV_FILES[1]}, or start on a new directory`,
          );
        }
      }
      if (made) for (let i = 1; i < wanted; i++) if (envs[i] === undefined) open(i, wanted, true);
    }
    const env = openStateEnv(owner, dir, { index: 0, count: wanted });
    envs[0] = env;
    const count = env.place.count;
    if (shards !== undefined && count !== shards) {
      refuse(
        `was made with ${plural(count)}, and ${shards} ${shards === 1 ? 'was' : 'were'} asked for (the count is fixed when a directory is made)`,
        "leave the count out to use the directory's, or start on a new directory",
      );
    }
    for (let i = 1; i < count; i++) if (envs[i] === undefined) open(i, count, made || env.fresh);
    const beyond = readdirSync(dir).find((name) => (shardDirIndex(name) ?? 0) >= count);
    if (beyond !== undefined)
      refuse(`was made with ${plural(count)}, and holds ${beyond} past them (another layout's)`);
    return envs;
  } catch (err) {
    for (const env of envs) if (env !== undefined) void env.root.close();
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
