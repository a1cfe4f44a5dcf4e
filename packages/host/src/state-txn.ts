import { expiredEnd, expirySecond, indexKey, NO_VALUE, readIndexKey } from './expiry-index.js';
import { misplaced, ONLY_SHARD, type ShardPlace, shardOf } from './shard-of.js';
import type { CacheEntry, StateCache } from './state-cache.js';
import type { StateEnv, StoredValue } from './state-env.js';
import type { StateReader } from './state-reader.js';

/**
 * What a job (StateDb.enqueue) may do with the state inside its transaction: read and write the
 * keys it declared, at the transaction's clock. A StateTxn, or a ShardedTxn over several shards'.
 */
export interface StateWriter extends StateReader {
  /** The store's clock, read once every lock the transaction needs is held (see StateTxn.now). */
  readonly now: number;
  /** See StateTxn.write. */
  write(id: string, state: unknown, ttl: number, now: number): void;
  /** See StateTxn.writeFrom. */
  writeFrom(id: string, state: unknown, ttl: number, at: number): void;
}

/**
 * A command's view of the state inside one LMDB write transaction: what it reads is the latest
 * committed value (of any process) or this transaction's own write, and what it writes is
 * committed with the transaction or not at all. Because every decision reads, decides and writes
 * inside the transaction, and LMDB lets one write transaction run at a time across processes, no
 * two decisions on a key interleave, whichever worker runs them.
 *
 * Each write keeps the expiry index (expiry-index.ts) in step with the value.
 */
export class StateTxn implements StateWriter {
  /** Cache entries this transaction wrote: their pending value becomes theirs if it commits. */
  readonly touched: CacheEntry[] = [];
  /** Whether this transaction wrote anything (else it commits no new transaction id). */
  wrote = false;
  /** Keys this transaction stored that were not stored before (a bound on the key count then applies). */
  added = 0;
  /** The last id looked up: a command reads a key then writes it, and need not look twice. */
  private lastId: string | undefined;
  private lastEntry: CacheEntry | undefined;
  private lastValue: StoredValue | undefined;

  constructor(
    private readonly env: StateEnv,
    private readonly cache: StateCache,
    /** This transaction's number (StateDb counts them), which marks the cache entries it wrote. */
    private readonly serial: number,
    /**
     * The store's clock read once the write lock is held: the time of the decisions made in this
     * transaction without an explicit `now`, and of expiry. Read inside the lock, the times of
     * successive transactions follow their order whichever process runs them; a time read when a
     * call was made could be earlier than a decision another process committed meanwhile.
     */
    readonly now: number,
    /** ms a state written at a caller's time outlives its ttl ({@link writeFrom}). */
    private readonly replayGrace: number,
    /**
     * Where this environment sits among the state's shards: a key of another shard read or
     * written here would be lost to it (never found where its shard looks), so it throws instead.
     */
    private readonly shard: ShardPlace = ONLY_SHARD,
  ) {}

  /**
   * {@link write} of a state whose `ttl` counts from `at`, the call's time. At a time the caller
   * passed (a replay; anything but this transaction's own clock) a state that still matters lives
   * the replay grace longer: states expire by the store's clock, while a replayed state lives in
   * the trace's time, which may stand still while the clock runs. A ttl ≤ 0 still deletes.
   */
  writeFrom(id: string, state: unknown, ttl: number, at: number): void {
    this.write(id, state, ttl > 0 && at !== this.now ? ttl + this.replayGrace : ttl, this.now);
  }

  /**
   * The value stored for `id`, expired or not, remembered as the last looked up. `remember`: a key
   * not cached yet enters the cache (the sweep's keys do not: they are leaving).
   */
  private lookup(id: string, remember = true): StoredValue | undefined {
    if (this.shard.count > 1 && shardOf(id, this.shard.count) !== this.shard.index) {
      misplaced(id, this.shard.count, `shard ${this.shard.index}`);
    }
    let entry = this.cache.get(id);
    let value: StoredValue | undefined;
    if (entry !== undefined) value = entry.txn === this.serial ? entry.pending : entry.value;
    else {
      value = this.env.state.get(Buffer.from(id, 'latin1'));
      // Not written by this transaction (a write leaves an entry it keeps): a committed value.
      entry = remember ? this.cache.add(id, value, this.serial) : undefined;
    }
    this.lastId = id;
    this.lastEntry = entry;
    this.lastValue = value;
    return value;
  }

  /** The state of `id`, or `undefined` when there is none or it is as good as new at `now` (server time). */
  read(id: string, now: number): unknown {
    const value = this.lookup(id);
    return value === undefined || value[1] <= now ? undefined : value[0];
  }

  /** Stores `state` for `ttl` ms from `now` (server time); `undefined` or a ttl ≤ 0 deletes the key. */
  write(id: string, state: unknown, ttl: number, now: number): void {
    const old = id === this.lastId ? this.lastValue : this.lookup(id);
    const entry = this.lastEntry;
    this.lastId = undefined;
    const deleting = state === undefined || ttl <= 0;
    if (deleting && old === undefined) return;
    if (old === undefined) this.added++;
    const key = Buffer.from(id, 'latin1');
    let value: StoredValue | undefined;
    if (deleting) {
      this.env.state.removeSync(key);
      this.env.expiry.removeSync(indexKey(old![2], key));
    } else {
      const expiresAt = now + ttl;
      const second = expirySecond(expiresAt);
      let indexed = old?.[2];
      // The entry stays while it is no later than the expiry (see expiry-index.ts).
      if (indexed === undefined || second < indexed) {
        if (indexed !== undefined) this.env.expiry.removeSync(indexKey(indexed, key));
        this.env.expiry.putSync(indexKey(second, key), NO_VALUE);
        indexed = second;
      }
      value = [state, expiresAt, indexed];
      this.env.state.putSync(key, value);
    }
    this.staged(entry, value);
  }

  /** Records `value` as this transaction's write in the cache `entry` (if the key has one). */
  private staged(entry: CacheEntry | undefined, value: StoredValue | undefined): void {
    this.wrote = true;
    if (entry === undefined) return;
    entry.pending = value;
    if (entry.txn !== this.serial) {
      entry.txn = this.serial;
      this.touched.push(entry);
    }
  }

  /**
   * One step of expiry: reads up to `limit` entries of the expiry index that are due at `now`,
   * removes the keys that have expired and moves the entries of those pushed later to their real
   * second. Only due entries are read, however many keys are live.
   */
  sweep(limit: number, now: number): { visited: number; removed: number } {
    let removed = 0;
    // Collected first: entries are removed below, under the range's cursor otherwise.
    const entries = [...this.env.expiry.getKeys({ end: expiredEnd(now), limit })];
    for (const indexEntry of entries) {
      if (this.visit(indexEntry, now, false) === 'removed') removed++;
    }
    return { visited: entries.length, removed };
  }

  /**
   * Makes room for the keys past a bound: removes up to `count` keys, those that expire soonest
   * first (the expired ones first of all), as Redis's `volatile-ttl` does. The expiry index is read
   * from its start; an entry whose key was pushed later is moved to its real second (as the sweep
   * does) instead of taken, so that a busy key is not mistaken for one about to expire. Visits at
   * most `4 × count + 16` entries. Returns the keys removed.
   */
  evict(count: number, now: number): number {
    let removed = 0;
    let budget = 4 * count + 16;
    while (removed < count && budget > 0) {
      const entries = [...this.env.expiry.getKeys({ limit: Math.min(budget, count - removed + 8) })];
      if (entries.length === 0) break;
      for (const indexEntry of entries) {
        budget--;
        if (this.visit(indexEntry, now, true) === 'removed' && ++removed === count) break;
      }
    }
    return removed;
  }

  /**
   * One entry of the expiry index: its key is removed when it has expired at `now` (or, with
   * `evicting`, when the entry holds its real second), else the entry moves to the key's real
   * second. An entry its key no longer points to (none should be left behind) is only dropped.
   */
  private visit(indexEntry: Buffer, now: number, evicting: boolean): 'removed' | 'moved' | 'dropped' {
    const [second, key] = readIndexKey(indexEntry);
    const value = this.lookup(key.toString('latin1'), false);
    const entry = this.lastEntry;
    this.env.expiry.removeSync(indexEntry);
    this.wrote = true;
    if (value === undefined || value[2] !== second) return 'dropped';
    const later = expirySecond(value[1]);
    if (value[1] <= now || (evicting && later === second)) {
      this.env.state.removeSync(key);
      this.staged(entry, undefined);
      return 'removed';
    }
    this.env.expiry.putSync(indexKey(later, key), NO_VALUE);
    const moved: StoredValue = [value[0], value[1], later];
    this.env.state.putSync(key, moved);
    this.staged(entry, moved);
    return 'moved';
  }
}
