import type { StoredValue } from './state-env.js';

/**
 * Committed values of recently used keys, decoded, in front of LMDB (at most `capacity`, the
 * first in leaving first): a returning key's read costs a Map lookup instead of an LMDB read and a
 * msgpack decode. It only ever holds what LMDB held when this process last committed:
 * StateDb empties it when another process (a worker) has committed since (LMDB's transaction ids
 * tell), so it never serves a stale value.
 */
export class StateCache {
  private readonly values = new Map<string, StoredValue>();

  constructor(private readonly capacity: number) {}

  get(id: string): StoredValue | undefined {
    return this.values.get(id);
  }

  /**
   * What LMDB now holds for `id` (`undefined`: nothing). A cached key is updated in place (no
   * reordering: a Map delete and set per write costs more than it saves).
   */
  set(id: string, value: StoredValue | undefined): void {
    if (value === undefined) {
      this.values.delete(id);
      return;
    }
    if (this.capacity === 0) return;
    this.values.set(id, value);
    if (this.values.size > this.capacity) this.values.delete(this.values.keys().next().value!);
  }

  clear(): void {
    if (this.values.size > 0) this.values.clear();
  }
}
