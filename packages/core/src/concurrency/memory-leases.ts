import type { Decision } from '../decision.js';
import { leaseDecision } from './lease-decision.js';
import type { LeaseAcquire, LeaseCall, LeaseStore } from './lease-store.js';

/**
 * One lease set: the sorted set of the Redis twin as two parallel arrays ordered by `startedAt`
 * (ties in arrival order). Leases nearly always arrive in time order, so adding is a push and
 * expiring is a cut from the front.
 */
interface LeaseSet {
  readonly times: number[];
  readonly ids: string[];
  /** The ttl of the last call: lets eviction tell a set whose leases are all stale. */
  ttl: number;
}

/** Sets looked at from the old end of a space before falling back to plain LRU. */
const EXPIRY_SCAN = 8;

/**
 * The memory store's leases (`MemoryStore.leases`): one process, synchronous, and bounded: a
 * set is deleted as soon as it is empty, and at most `maxKeys` sets are held (past it, a set whose
 * leases have all expired goes first, then the least recently written one, whose leases are then
 * forgotten).
 */
export class MemoryLeases implements LeaseStore {
  private readonly spaces = new Map<string, Map<string, LeaseSet>>();
  private size = 0;

  constructor(
    /** Most lease sets held across all spaces. */
    readonly maxKeys: number,
    /** The clock used when a call supplies no `now`: ms. */
    readonly clock: () => number,
  ) {}

  /** Lease sets currently kept, across all spaces. */
  get keyCount(): number {
    return this.size;
  }

  acquire(call: LeaseAcquire, now: number | undefined): Decision {
    const at = now ?? this.clock();
    let space = this.spaces.get(call.space);
    let set = space?.get(call.key);
    if (set !== undefined) expire(set, at - call.ttl);
    const count = set === undefined ? 0 : set.ids.length;
    const index = set === undefined ? -1 : set.ids.indexOf(call.id);
    if (index < 0 && count >= call.limit) {
      return leaseDecision(false, count, set!.times[0], set!.times[count - 1], call, at);
    }
    if (space === undefined) {
      space = new Map();
      this.spaces.set(call.space, space);
    }
    if (set === undefined) {
      set = { times: [at], ids: [call.id], ttl: call.ttl };
      space.set(call.key, set);
      this.size++;
      this.reclaimOldest(space, at);
      if (this.size > this.maxKeys) this.evict(space, call.key, at);
    } else {
      // Re-insert so the Map's order is the order of last write: its first entry is the LRU.
      space.delete(call.key);
      space.set(call.key, set);
      set.ttl = call.ttl;
      if (index >= 0) {
        set.times.splice(index, 1);
        set.ids.splice(index, 1);
      }
      insert(set, at, call.id);
    }
    const size = set.ids.length;
    return leaseDecision(true, size, set.times[0], set.times[size - 1], call, at);
  }

  peek(call: LeaseAcquire, now: number | undefined): Decision {
    const at = now ?? this.clock();
    const set = this.spaces.get(call.space)?.get(call.key);
    if (set === undefined) return leaseDecision(true, 0, undefined, undefined, call, at);
    expire(set, at - call.ttl);
    const count = set.ids.length;
    if (count === 0) {
      this.reset(call.space, call.key);
      return leaseDecision(true, 0, undefined, undefined, call, at);
    }
    const allowed = count < call.limit || set.ids.includes(call.id);
    return leaseDecision(allowed, count, set.times[0], set.times[count - 1], call, at);
  }

  release(call: LeaseCall, now: number | undefined): boolean {
    const space = this.spaces.get(call.space);
    const set = space?.get(call.key);
    if (set === undefined) return false;
    expire(set, (now ?? this.clock()) - set.ttl);
    const index = set.ids.indexOf(call.id);
    if (index >= 0) {
      set.times.splice(index, 1);
      set.ids.splice(index, 1);
    }
    if (set.ids.length === 0) this.drop(space!, call.space, call.key);
    return index >= 0;
  }

  reset(space: string, key: string): void {
    const sets = this.spaces.get(space);
    if (sets?.has(key)) this.drop(sets, space, key);
  }

  /** Forgets every lease. */
  clear(): void {
    this.spaces.clear();
    this.size = 0;
  }

  /** The ids held in one set, oldest first, for tests and debugging (stale ones included). */
  inspect(space: string, key: string): readonly string[] {
    return this.spaces.get(space)?.get(key)?.ids.slice() ?? [];
  }

  private drop(sets: Map<string, LeaseSet>, space: string, key: string): void {
    if (sets.delete(key)) this.size--;
    if (sets.size === 0) this.spaces.delete(space);
  }

  /** One fully expired set reclaimed per new set keeps idle keys from piling up, with no timer. */
  private reclaimOldest(space: Map<string, LeaseSet>, now: number): void {
    const oldest = space.entries().next();
    if (!oldest.done && isStale(oldest.value[1], now)) {
      space.delete(oldest.value[0]);
      this.size--;
    }
  }

  private evict(writing: Map<string, LeaseSet>, keep: string, now: number): void {
    let scanned = 0;
    for (const [key, set] of writing) {
      if (++scanned > EXPIRY_SCAN) break;
      if (key !== keep && isStale(set, now)) {
        writing.delete(key);
        this.size--;
        return;
      }
    }
    // The largest space loses its least recently written set: a flood of unique keys evicts its
    // own keys first. Its live leases are forgotten (more may then be admitted on that key).
    let largest: [name: string, sets: Map<string, LeaseSet>] | undefined;
    let most = 0;
    for (const [name, sets] of this.spaces) {
      const evictable = sets === writing ? sets.size - 1 : sets.size;
      if (evictable > most) {
        most = evictable;
        largest = [name, sets];
      }
    }
    if (largest === undefined) return;
    const [name, sets] = largest;
    for (const key of sets.keys()) {
      if (sets === writing && key === keep) continue;
      this.drop(sets, name, key);
      return;
    }
  }
}

/** Removes every lease with `startedAt <= cutoff` (ZREMRANGEBYSCORE -inf cutoff). */
function expire(set: LeaseSet, cutoff: number): void {
  const { times, ids } = set;
  if (times.length === 0 || times[0]! > cutoff) return;
  let n = 1;
  while (n < times.length && times[n]! <= cutoff) n++;
  times.splice(0, n);
  ids.splice(0, n);
}

/** Adds in score order; equal scores keep arrival order. */
function insert(set: LeaseSet, at: number, id: string): void {
  const { times, ids } = set;
  let i = times.length;
  while (i > 0 && times[i - 1]! > at) i--;
  if (i === times.length) {
    times.push(at);
    ids.push(id);
  } else {
    times.splice(i, 0, at);
    ids.splice(i, 0, id);
  }
}

function isStale(set: LeaseSet, now: number): boolean {
  const newest = set.times[set.times.length - 1];
  return newest === undefined || newest <= now - set.ttl;
}
