import { expiredEnd, expirySecond, indexKey, NO_VALUE, readIndexKey } from './expiry-index.js';
import type { StateCache } from './state-cache.js';
import type { StateEnv, StoredValue } from './state-env.js';

/**
 * A command's view of the state inside one LMDB write transaction: what it reads is the latest
 * committed value (of any process) or this transaction's own write, and what it writes is
 * committed with the transaction or not at all. Because every decision reads, decides and writes
 * inside the transaction, and LMDB lets one write transaction run at a time across processes, no
 * two decisions on a key interleave, whichever worker runs them.
 *
 * Each write keeps the expiry index (expiry-index.ts) in step with the value.
 */
export class StateTxn {
  /** Values written in this transaction, by stored id: the cache learns them once it commits. */
  readonly written = new Map<string, StoredValue | undefined>();

  constructor(
    private readonly env: StateEnv,
    private readonly cache: StateCache,
  ) {}

  /** The value stored for `id`, expired or not. */
  private stored(id: string): StoredValue | undefined {
    if (this.written.size > 0 && this.written.has(id)) return this.written.get(id);
    const cached = this.cache.get(id);
    if (cached !== undefined) return cached;
    const value = this.env.state.get(Buffer.from(id, 'latin1'));
    // Not written in this transaction: a committed value, which the cache may hold.
    if (value !== undefined) this.cache.set(id, value);
    return value;
  }

  /** The state of `id`, or `undefined` when there is none or it is as good as new at `now` (server time). */
  read(id: string, now: number): unknown {
    const value = this.stored(id);
    return value === undefined || value[1] <= now ? undefined : value[0];
  }

  /** Stores `state` for `ttl` ms from `now` (server time); `undefined` or a ttl ≤ 0 deletes the key. */
  write(id: string, state: unknown, ttl: number, now: number): void {
    const value: StoredValue | undefined = state === undefined || ttl <= 0 ? undefined : [state, now + ttl];
    const old = this.stored(id);
    if (value === undefined && old === undefined) return;
    const key = Buffer.from(id, 'latin1');
    if (value === undefined) this.env.state.removeSync(key);
    else this.env.state.putSync(key, value);
    const before = old === undefined ? undefined : expirySecond(old[1]);
    const after = value === undefined ? undefined : expirySecond(value[1]);
    if (before !== after) {
      if (before !== undefined) this.env.expiry.removeSync(indexKey(before, key));
      if (after !== undefined) this.env.expiry.putSync(indexKey(after, key), NO_VALUE);
    }
    this.written.set(id, value);
  }

  /**
   * Removes up to `limit` keys that have expired at `now`, reading the expiry index from its
   * start: only expired entries are visited, however many keys are live. Returns how many
   * stored keys it removed.
   */
  sweep(limit: number, now: number): number {
    let removed = 0;
    // Collected first: entries are removed below, under the range's cursor otherwise.
    const entries = [...this.env.expiry.getKeys({ end: expiredEnd(now), limit })];
    for (const entry of entries) {
      const [second, key] = readIndexKey(entry);
      const id = key.toString('latin1');
      const value = this.stored(id);
      // An entry whose value moved to another second (or is gone) is only dropped from the index.
      if (value !== undefined && expirySecond(value[1]) === second) {
        this.env.state.removeSync(key);
        this.written.set(id, undefined);
        removed++;
      }
      this.env.expiry.removeSync(entry);
    }
    return removed;
  }
}
