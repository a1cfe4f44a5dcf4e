import type { Algorithm } from '@sluice/core';
import { FingerprintMap } from '@sluice/core/adapter';
import { escapeKey } from '../key-escape.js';
import { hashSlot } from '../slot.js';
import { type Delta, type MergeRule, mergeRule } from './merge-rules.js';

/** One algorithm's keys in this process. */
export interface Space {
  readonly algorithm: Algorithm;
  readonly rule: MergeRule;
  /** Its field in a user key's hash (as `RedisStore`'s: the fingerprint). */
  readonly field: string;
  readonly entries: Map<string, Entry>;
}

/** One key's local view and what this node consumed on it since it last sent. */
export interface Entry {
  readonly space: Space;
  readonly key: string;
  /** Its user key's hash in Redis (`<prefix>{<escaped key>}`, as `RedisStore`'s), and its Cluster hash slot (0 on a standalone Redis). */
  readonly redisKey: string;
  readonly slot: number;
  /** The algorithm's state as this node sees it: the fleet's at the last sync plus its own since. */
  view: unknown;
  /** Consumed here since the last send; undefined for none. */
  delta: Delta | undefined;
  /** In the next batch: consumed or decided on since the last send (a key in use is kept fresh). */
  queued: boolean;
  /**
   * Batches it is still pulled in: 2 after each use, so the view a node decides on next is at most
   * two cycles old as long as the key is used at least once every two cycles.
   */
  pulls: number;
  /** The table generation in which it was last moved to the back of the eviction order. */
  generation: number;
}

/**
 * The keys a node holds, one `Space` per algorithm fingerprint, bounded like `MemoryStore`
 * (`maxKeys`, no per-key timers): one `Set` in eviction order across every space, oldest first. An
 * entry used in a later generation than the one it was placed in moves to the back, so a key in
 * use survives a flood of new keys (once per generation: the move costs a delete and an add, too
 * much for every request). A generation lasts `maxKeys / 2` insertions. An evicted entry still
 * queued stays in the batch: what it consumed is still sent.
 */
export class LocalTable {
  private readonly spaces = new FingerprintMap<Space>(newSpace);
  private readonly order = new Set<Entry>();
  private generation = 0;
  private inserted = 0;

  /**
   * @param prefix the store's key prefix (`RedisStore`'s keys)
   * @param cluster whether keys need their hash slot (one sync script per slot)
   */
  constructor(
    private readonly maxKeys: number,
    private readonly prefix: string,
    private readonly cluster: boolean,
  ) {}

  get size(): number {
    return this.order.size;
  }

  /** The entry of a key, made if new (possibly evicting the oldest); kept from eviction if not. */
  entry(algorithm: Algorithm, key: string): Entry {
    const space = this.spaces.of(algorithm);
    let entry = space.entries.get(key);
    if (entry === undefined) {
      const redisKey = `${this.prefix}{${escapeKey(key)}}`;
      entry = {
        space,
        key,
        redisKey,
        slot: this.cluster ? hashSlot(redisKey) : 0,
        view: undefined,
        delta: undefined,
        queued: false,
        pulls: 0,
        generation: 0,
      };
      this.add(entry);
    } else {
      this.use(entry);
    }
    return entry;
  }

  /** The entry of a key this node holds, or undefined (nothing is made). */
  existing(algorithm: Algorithm, key: string): Entry | undefined {
    return this.spaces.existing(algorithm)?.entries.get(key);
  }

  /** Whether `entry` is still the one held for its key (not evicted, not replaced). */
  isCurrent(entry: Entry): boolean {
    return entry.space.entries.get(entry.key) === entry;
  }

  remove(entry: Entry): void {
    if (!this.order.delete(entry)) return;
    entry.space.entries.delete(entry.key);
  }

  clear(): void {
    for (const space of this.spaces.all()) space.entries.clear();
    this.order.clear();
  }

  /** Keeps `entry` from eviction for this generation. */
  private use(entry: Entry): void {
    if (entry.generation === this.generation) return;
    entry.generation = this.generation;
    this.order.delete(entry);
    this.order.add(entry);
  }

  private add(entry: Entry): void {
    if (this.order.size >= this.maxKeys) {
      const oldest = this.order.values().next().value as Entry;
      this.remove(oldest);
    }
    if (++this.inserted >= Math.max(1, this.maxKeys >> 1)) {
      this.inserted = 0;
      this.generation++;
    }
    entry.generation = this.generation;
    entry.space.entries.set(entry.key, entry);
    this.order.add(entry);
  }
}

/** A new fingerprint's space, empty. */
function newSpace(algorithm: Algorithm): Space {
  return { algorithm, rule: mergeRule(algorithm), field: algorithm.fingerprint, entries: new Map() };
}
