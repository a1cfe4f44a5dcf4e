import { open, type RootDatabase } from 'lmdb';

/**
 * When a decision's reply is sent, relative to its write reaching LMDB:
 * - `'commit'`: after the LMDB transaction holding the write commits. The data is then in the
 *   file's pages (the OS page cache): it survives a clean restart and the server process being
 *   killed (`SIGKILL`), not a power loss or kernel crash (LMDB then restores the last flushed
 *   transaction, a few ms older).
 * - `'flush'`: after that transaction is also flushed to the disk (fsync): it survives a power loss
 *   as far as the disk honours flushes. Costs a flush per commit batch.
 */
export type Durability = 'commit' | 'flush';

/** A write not yet committed: later reads must see it (read your own writes across connections). */
interface PendingWrite {
  readonly value: StoredValue | undefined;
  readonly done: Promise<unknown>;
}

/** What LMDB holds per key: the algorithm's state and the server time at which it is as good as new. */
type StoredValue = readonly [state: unknown, expiresAt: number];

/**
 * Limit state in LMDB, keyed by `prefix \0 key` (the prefix names the algorithm and all its
 * parameters, as Smyte put them in the key). Every read and write runs on the one JS thread, so a
 * decision's read-modify-write never interleaves with another's; writes queue in lmdb-js's batch
 * (one transaction per event-loop turn, committed on its worker thread) and stay readable from
 * `pending` until they commit.
 */
export class StateDb {
  private readonly db: RootDatabase<StoredValue, Buffer>;
  private readonly pending = new Map<string, PendingWrite>();
  private readonly durability: Durability;
  private sweepCursor: Buffer | undefined;

  constructor(path: string, durability: Durability) {
    this.durability = durability;
    this.db = open<StoredValue, Buffer>({ path, keyEncoding: 'binary' });
  }

  /** The state stored for `id`, or `undefined` when there is none or it is as good as new at `serverNow`. */
  read(id: string, serverNow: number): { state: unknown; waitFor: Promise<unknown> | undefined } {
    const pending = this.pending.get(id);
    const value = pending === undefined ? this.db.get(Buffer.from(id, 'latin1')) : pending.value;
    const state = value === undefined || value[1] <= serverNow ? undefined : value[0];
    return { state, waitFor: pending?.done };
  }

  /**
   * Stores `state` (or deletes the key when `state` is `undefined` or `ttl` ≤ 0). Returns the
   * promise to await before acknowledging, per the durability setting.
   */
  write(id: string, state: unknown, ttl: number, serverNow: number): Promise<unknown> {
    const key = Buffer.from(id, 'latin1');
    const value: StoredValue | undefined =
      state === undefined || ttl <= 0 ? undefined : [state, serverNow + ttl];
    const committed = value === undefined ? this.db.remove(key) : this.db.put(key, value);
    const done = this.durability === 'flush' ? committed.then(() => this.db.flushed) : committed;
    const entry: PendingWrite = { value, done };
    this.pending.set(id, entry);
    const settle = () => {
      if (this.pending.get(id) === entry) this.pending.delete(id);
    };
    done.then(settle, settle);
    return done;
  }

  /**
   * One bounded step of the background sweep (Smyte's compaction filter): visits at most `limit`
   * keys from where the last step stopped and removes those whose state is as good as new.
   * Returns how many it removed. Runs between requests, never holds a transaction open.
   */
  sweep(limit: number, serverNow: number): number {
    let visited = 0;
    let removed = 0;
    let last: Buffer | undefined;
    const range = this.db.getRange(
      this.sweepCursor === undefined ? { limit } : { start: this.sweepCursor, limit },
    );
    for (const { key, value } of range) {
      visited++;
      last = key;
      const id = key.toString('latin1');
      // A key with a write in flight is left to that write; a removal in flight is not counted twice.
      if (value[1] <= serverNow && !this.pending.has(id)) {
        void this.write(id, undefined, 0, serverNow).catch(() => {});
        removed++;
      }
    }
    // Next step starts after the last key visited; a short page means the end: wrap around.
    this.sweepCursor =
      visited < limit || last === undefined ? undefined : Buffer.concat([last, Buffer.from([0])]);
    return removed;
  }

  /** Keys stored (committed), for INFO. */
  count(): number {
    return (this.db.getStats() as { entryCount: number }).entryCount;
  }

  /** Resolves when every write queued so far is committed and flushed to disk. */
  async flushed(): Promise<void> {
    await this.db.flushed;
  }

  /** Waits for every queued write, then closes the environment. */
  async close(): Promise<void> {
    await this.db.flushed;
    await this.db.close();
  }
}
