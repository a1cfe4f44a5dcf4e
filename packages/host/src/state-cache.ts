import type { StoredValue } from './state-env.js';

/**
 * One key's cached state: what LMDB held when this process last looked or committed (`undefined`:
 * no key), and the value written by the transaction `txn` if it is the one running now.
 */
export interface CacheEntry {
  value: StoredValue | undefined;
  pending: StoredValue | undefined;
  txn: number;
}

/**
 * Recently used keys, decoded, in front of LMDB (at most `capacity`, the first in leaving first):
 * a returning key's read costs a Map lookup instead of an LMDB read and a msgpack decode, and the
 * write that follows no lookup at all (it holds the entry). An entry's `value` is only ever what
 * LMDB held when this process last read or committed it; StateDb empties the cache when another
 * process (a worker) has committed since (LMDB's transaction ids tell), so it never serves a
 * stale value. A transaction's writes wait in `pending` and become the value once it commits;
 * an aborted one needs no undoing.
 */
export class StateCache {
  private readonly entries = new Map<string, CacheEntry>();

  constructor(private readonly capacity: number) {}

  get(id: string): CacheEntry | undefined {
    return this.entries.get(id);
  }

  /**
   * Caches `value`, committed, for `id` (returns `undefined` when the cache is off). Full, it
   * drops the oldest entry, but not one the running transaction `txn` wrote: its reads must find
   * that write here (LMDB would give it as if committed).
   */
  add(id: string, value: StoredValue | undefined, txn: number): CacheEntry | undefined {
    if (this.capacity === 0) return undefined;
    const entry: CacheEntry = { value, pending: undefined, txn: 0 };
    this.entries.set(id, entry);
    for (let tries = 0; this.entries.size > this.capacity && tries < 8; tries++) {
      const [oldest, old] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      if (old.txn === txn) this.entries.set(oldest, old);
    }
    return entry;
  }

  clear(): void {
    if (this.entries.size > 0) this.entries.clear();
  }
}
