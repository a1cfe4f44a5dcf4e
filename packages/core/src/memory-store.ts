import type { Algorithm } from './algorithm.js';
import { MemoryLeases } from './concurrency/memory-leases.js';
import type { Decision } from './decision.js';
import { describeValue, ErrorCode, SluiceError } from './errors.js';
import { type LimitCall, type Store, settleBatch, UNCHANGED } from './store.js';
import { assertKnownOptions, integerOption } from './validate.js';

export interface MemoryStoreOptions {
  /**
   * Most keys held across all limits. Past it, expired entries go first, then the least recently
   * written. Bounds memory under a flood of unique keys (≈100 bytes per token-bucket key).
   * @default 100_000
   */
  maxKeys?: number;
  /** The clock used when a call supplies no `now`: ms since the epoch. @default Date.now */
  clock?: () => number;
}

const KNOWN = ['maxKeys', 'clock'] as const satisfies readonly (keyof MemoryStoreOptions)[];

/** Entries looked at from the old end of a key space before falling back to plain LRU. */
const EXPIRY_SCAN = 8;

/**
 * The zero-config store: one process, no I/O, answers synchronously. One `Map` per algorithm
 * fingerprint (so keys need no prefixing on the hot path), ordered by last write for LRU eviction;
 * no timer per key: expired entries are reclaimed as new keys arrive.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number;
  readonly clock: () => number;
  /** Concurrency leases, bounded by the same `maxKeys` (counted apart from limit keys). */
  readonly leases: MemoryLeases;
  private readonly spaces = new Map<string, Map<string, unknown>>();
  private size = 0;
  /** The space of the last algorithm seen (spaces are never removed except by `shutdown`). */
  private lastAlgorithm: Algorithm | undefined;
  private lastSpace: Map<string, unknown> | undefined;
  /**
   * The key appended last to `newestSpace`, i.e. its newest entry: rewriting it needs no
   * delete-and-reinsert to stay last. Every append to a space goes through `write`, which sets it.
   */
  private newestSpace: Map<string, unknown> | undefined;
  private newestKey: string | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    assertKnownOptions('MemoryStore', options, KNOWN);
    this.maxKeys = integerOption('maxKeys', options.maxKeys ?? 100_000);
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `clock must be a function returning ms since the epoch; got ${describeValue(options.clock)}`,
        { option: 'clock', value: options.clock },
      );
    }
    this.clock = options.clock ?? Date.now;
    this.leases = new MemoryLeases(this.maxKeys, this.clock);
  }

  /** Keys currently held, across all limits. */
  get keyCount(): number {
    return this.size;
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    if (calls.length === 1) {
      const call = calls[0]!;
      return [this.consumeOne(call.algorithm, call.key, call.cost, call.policy, at)];
    }
    const spaces = calls.map((call) => this.space(call.algorithm));
    const states = calls.map((call, i) => spaces[i]!.get(call.key));
    const { decisions, writes } = settleBatch(calls, states, at);
    for (let i = 0; i < calls.length; i++) {
      const next = writes[i];
      if (next !== UNCHANGED)
        this.write(spaces[i]!, calls[i]!.key, next, states[i] !== undefined, calls[i]!.algorithm, at);
    }
    return decisions;
  }

  /**
   * The common single-limit case, without the batch's arrays: what `consume([call], now)` does.
   * `Limiter` calls it directly for a single limit on a memory store (the hot path of the
   * benchmark), so it allocates nothing beyond the algorithm's own decision.
   * @internal
   */
  consumeOne(algorithm: Algorithm, key: string, cost: number, policy: string, now: number): Decision {
    const space = this.space(algorithm);
    const state = space.get(key);
    const step = algorithm.consume(state, now, cost, policy);
    if (step.state !== state) this.write(space, key, step.state, state !== undefined, algorithm, now);
    return step.decision;
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    return calls.map((call) =>
      call.algorithm.peek(
        this.spaces.get(call.algorithm.fingerprint)?.get(call.key),
        at,
        call.cost,
        call.policy,
      ),
    );
  }

  reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): void {
    for (const call of calls) {
      const space = this.spaces.get(call.algorithm.fingerprint);
      if (space?.delete(call.key)) this.size--;
    }
  }

  refund(calls: readonly LimitCall[], now: number | undefined): void {
    const at = now ?? this.clock();
    for (const call of calls) {
      const space = this.spaces.get(call.algorithm.fingerprint);
      const state = space?.get(call.key);
      if (space === undefined || state === undefined || call.algorithm.refund === undefined) continue;
      const next = call.algorithm.refund(state, at, call.cost);
      if (next !== undefined) space.set(call.key, next);
      else if (space.delete(call.key)) this.size--;
    }
  }

  shutdown(): void {
    this.spaces.clear();
    this.lastAlgorithm = this.lastSpace = this.newestSpace = this.newestKey = undefined;
    this.size = 0;
    this.leases.clear();
  }

  /** The stored state of one key, for tests and debugging. */
  inspect(algorithm: Algorithm, key: string): unknown {
    return this.spaces.get(algorithm.fingerprint)?.get(key);
  }

  private space(algorithm: Algorithm): Map<string, unknown> {
    // One limiter per store is the common case: skip the lookup by fingerprint when it repeats.
    if (algorithm === this.lastAlgorithm) return this.lastSpace!;
    let space = this.spaces.get(algorithm.fingerprint);
    if (space === undefined) {
      space = new Map();
      this.spaces.set(algorithm.fingerprint, space);
    }
    this.lastAlgorithm = algorithm;
    this.lastSpace = space;
    return space;
  }

  private write(
    space: Map<string, unknown>,
    key: string,
    next: unknown,
    existed: boolean,
    algorithm: Algorithm,
    now: number,
  ): void {
    if (next === undefined) {
      if (space.delete(key)) this.size--;
      return;
    }
    if (existed) {
      // Re-insert so the Map's order is the order of last write: its first entry is the LRU.
      // The newest entry is already last, so a hot key is updated in place.
      if (key !== this.newestKey || space !== this.newestSpace) {
        space.delete(key);
        this.newestSpace = space;
        this.newestKey = key;
      }
      space.set(key, next);
      return;
    }
    space.set(key, next);
    this.newestSpace = space;
    this.newestKey = key;
    this.size++;
    this.reclaimOldest(space, algorithm, now);
    if (this.size > this.maxKeys) this.evict(space, algorithm, now);
  }

  /** One expired entry reclaimed per new key keeps idle state from piling up, with no timer. */
  private reclaimOldest(space: Map<string, unknown>, algorithm: Algorithm, now: number): void {
    const oldest = space.entries().next();
    if (!oldest.done && oldest.value[0] !== undefined && algorithm.ttl(oldest.value[1], now) <= 0) {
      space.delete(oldest.value[0]);
      this.size--;
    }
  }

  private evict(writing: Map<string, unknown>, algorithm: Algorithm, now: number): void {
    // Expired first: look a few entries deep from the old end of the space being written.
    let scanned = 0;
    for (const [key, state] of writing) {
      if (++scanned > EXPIRY_SCAN) break;
      if (algorithm.ttl(state, now) <= 0) {
        writing.delete(key);
        this.size--;
        return;
      }
    }
    // Then least recently written, from the largest space: a flood of unique keys lands in one
    // space and so evicts its own keys first.
    let largest = writing;
    for (const space of this.spaces.values()) if (space.size > largest.size) largest = space;
    const lru = largest.keys().next();
    if (!lru.done) {
      largest.delete(lru.value);
      this.size--;
    }
  }
}
