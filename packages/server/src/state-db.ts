import { open, type RootDatabase } from 'lmdb';

/**
 * When a decision's reply is sent, relative to its write reaching LMDB:
 * - `'commit'`: after the LMDB transaction holding the write commits, without an fsync (the
 *   environment is opened `noSync`; all writes of one event-loop turn commit together, on the main
 *   thread, in one synchronous transaction, before any reply of that turn is written). The data is
 *   then in the OS page cache: it survives a clean restart and the server process being killed
 *   (`SIGKILL`). The environment is flushed to disk once a second in the background, as Redis's
 *   AOF with `appendfsync everysec` is: a power loss or kernel crash can lose up to about a
 *   second of writes and, as LMDB warns for `MDB_NOSYNC`, can leave the environment corrupt if it
 *   strikes between two flushes.
 * - `'flush'`: after that transaction is also flushed to the disk (fsync, lmdb-js's overlapping
 *   sync, committed on its worker thread): it survives a power loss as far as the disk honours
 *   flushes. Costs a flush per commit batch (measured: about 4× fewer decisions per second).
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
 * decision's read-modify-write never interleaves with another's; writes wait in this turn's batch
 * (`'commit'`) or lmdb-js's (`'flush'`) and stay readable from there until they commit.
 *
 * Committed values of recently used keys are also held decoded in `cache` (at most `cacheKeys`,
 * first in, first out): this process is the environment's only writer, so the cache
 * never goes stale, and a returning key's read costs a Map lookup instead of an LMDB read and a
 * msgpack decode. The cache only ever holds what LMDB holds: a value enters it once committed,
 * and a failed commit drops the keys it touched.
 */
export class StateDb {
  private readonly db: RootDatabase<StoredValue, Buffer>;
  private readonly pending = new Map<string, PendingWrite>();
  private readonly cache = new Map<string, StoredValue>();
  private readonly durability: Durability;
  private sweepCursor: Buffer | undefined;
  /** `'commit'` mode: this turn's writes, committed together by `commitTurn` (setImmediate). */
  private turn: Map<string, StoredValue | undefined> | undefined;
  private turnDone: Promise<void> | undefined;
  private settleTurn: ((err?: Error) => void) | undefined;
  /** `'commit'` mode: the once-a-second flush to disk. */
  private readonly syncTimer: NodeJS.Timeout | undefined;

  constructor(
    path: string,
    durability: Durability,
    private readonly cacheKeys: number,
  ) {
    this.durability = durability;
    this.db = open<StoredValue, Buffer>({
      path,
      keyEncoding: 'binary',
      ...(durability === 'commit' ? { noSync: true } : {}),
    });
    if (durability === 'commit') {
      this.syncTimer = setInterval(() => void this.sync().catch(() => {}), 1000);
      this.syncTimer.unref();
    }
  }

  /** Flushes the environment to disk (mdb_env_sync, on lmdb-js's worker). */
  private sync(): Promise<void> {
    // `sync` is on lmdb-js's database object (open.js) but missing from its type declarations.
    const db = this.db as unknown as { sync(callback: (err: Error | null) => void): void };
    return new Promise((resolve, reject) => db.sync((err) => (err ? reject(err) : resolve())));
  }

  /** The state stored for `id`, or `undefined` when there is none or it is as good as new at `serverNow`. */
  read(id: string, serverNow: number): { state: unknown; waitFor: Promise<unknown> | undefined } {
    let value: StoredValue | undefined;
    let waitFor: Promise<unknown> | undefined;
    if (this.turn?.has(id)) {
      value = this.turn.get(id);
      waitFor = this.turnDone;
    } else {
      const pending = this.pending.get(id);
      if (pending === undefined) value = this.cache.get(id) ?? this.load(id);
      else {
        value = pending.value;
        waitFor = pending.done;
      }
    }
    const state = value === undefined || value[1] <= serverNow ? undefined : value[0];
    return { state, waitFor };
  }

  /** A committed value from LMDB, kept in the cache. */
  private load(id: string): StoredValue | undefined {
    const value = this.db.get(Buffer.from(id, 'latin1'));
    if (value !== undefined) this.cached(id, value);
    return value;
  }

  /**
   * What LMDB now holds for `id` (`undefined`: nothing). A cached key is updated in place (no
   * reordering: a Map delete and set per write costs more than it saves), so the oldest key to
   * enter leaves first when the cache is full.
   */
  private cached(id: string, value: StoredValue | undefined): void {
    if (value === undefined) {
      this.cache.delete(id);
      return;
    }
    if (this.cacheKeys === 0) return;
    this.cache.set(id, value);
    if (this.cache.size > this.cacheKeys) this.cache.delete(this.cache.keys().next().value!);
  }

  /**
   * Stores `state` (or deletes the key when `state` is `undefined` or `ttl` ≤ 0). Returns the
   * promise to await before acknowledging, per the durability setting.
   */
  write(id: string, state: unknown, ttl: number, serverNow: number): Promise<unknown> {
    const value: StoredValue | undefined =
      state === undefined || ttl <= 0 ? undefined : [state, serverNow + ttl];
    if (this.durability === 'commit') return this.writeInTurn(id, value);
    const key = Buffer.from(id, 'latin1');
    const committed = value === undefined ? this.db.remove(key) : this.db.put(key, value);
    const done = this.durability === 'flush' ? committed.then(() => this.db.flushed) : committed;
    const entry: PendingWrite = { value, done };
    this.pending.set(id, entry);
    // The cache learns the value once committed; a failed write leaves LMDB to say what is there.
    const settle = (ok: boolean) => {
      if (this.pending.get(id) === entry) {
        this.pending.delete(id);
        if (ok) this.cached(id, value);
        else this.cache.delete(id);
      }
    };
    done.then(
      () => settle(true),
      () => settle(false),
    );
    return done;
  }

  /**
   * `'commit'` mode: the write joins this turn's batch. The first write of a turn schedules one
   * synchronous commit after the poll phase (setImmediate), so every reply computed from the sockets
   * read in this turn waits for one commit, not one each, and no worker-thread round trip.
   */
  private writeInTurn(id: string, value: StoredValue | undefined): Promise<void> {
    if (this.turn === undefined) {
      this.turn = new Map();
      this.turnDone = new Promise<void>((resolve, reject) => {
        this.settleTurn = (err) => (err === undefined ? resolve() : reject(err));
      });
      // A rejected turn is reported through each reply that awaits it; never unhandled.
      this.turnDone.catch(() => {});
      setImmediate(() => this.commitTurn());
    }
    this.turn.set(id, value);
    return this.turnDone!;
  }

  /** Commits this turn's writes in one transaction (a no-op when none are queued). */
  private commitTurn(): void {
    const turn = this.turn;
    const settle = this.settleTurn;
    if (turn === undefined || settle === undefined) return;
    this.turn = undefined;
    this.turnDone = undefined;
    this.settleTurn = undefined;
    try {
      this.db.transactionSync(() => {
        for (const [id, value] of turn) {
          const key = Buffer.from(id, 'latin1');
          if (value === undefined) this.db.removeSync(key);
          else this.db.putSync(key, value);
        }
      });
      for (const [id, value] of turn) this.cached(id, value);
      settle();
    } catch (err) {
      // The transaction rolled back: LMDB holds what it held, which the next read loads.
      for (const id of turn.keys()) this.cache.delete(id);
      settle(err as Error);
    }
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
      if (value[1] <= serverNow && !this.pending.has(id) && !this.turn?.has(id)) {
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
    this.commitTurn();
    await this.db.flushed;
    if (this.durability === 'commit') await this.sync();
  }

  /** Waits for every queued write, then closes the environment. */
  async close(): Promise<void> {
    clearInterval(this.syncTimer);
    this.commitTurn();
    await this.db.flushed;
    if (this.durability === 'commit') await this.sync();
    await this.db.close();
  }
}
