import type { Algorithm } from './algorithm.js';
import type { BlockState } from './block.js';

interface Entry {
  readonly state: BlockState;
  /** ms since the epoch after which the record is forgotten (the block, then its decay). */
  readonly expires: number;
}

/**
 * The memory store's block records (`LimitCall.block`), apart from limit state: only limits with
 * a block have any, and a record outlives the algorithm's state (it remembers a streak for
 * `decay`). Bounded by `maxKeys`: past it, the record written longest ago goes first (a Map keeps
 * insertion order, and a write re-inserts).
 */
export class MemoryBlocks {
  private readonly records = new Map<string, Entry>();

  constructor(private readonly maxKeys: number) {}

  get(algorithm: Algorithm, key: string, now: number): BlockState | undefined {
    const id = idOf(algorithm, key);
    const entry = this.records.get(id);
    if (entry === undefined) return undefined;
    if (now >= entry.expires) {
      this.records.delete(id);
      return undefined;
    }
    return entry.state;
  }

  set(algorithm: Algorithm, key: string, state: BlockState, ttl: number, now: number): void {
    const id = idOf(algorithm, key);
    this.records.delete(id);
    this.records.set(id, { state, expires: now + ttl });
    if (this.records.size > this.maxKeys) {
      const oldest = this.records.keys().next();
      if (!oldest.done) this.records.delete(oldest.value);
    }
  }

  delete(algorithm: Algorithm, key: string): void {
    this.records.delete(idOf(algorithm, key));
  }

  clear(): void {
    this.records.clear();
  }
}

// The fingerprint is base 36 with '.' (no ':'), so this id is injective.
function idOf(algorithm: Algorithm, key: string): string {
  return `${algorithm.fingerprint}:${key}`;
}
