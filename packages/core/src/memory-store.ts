import type { Algorithm } from './algorithm.js';
import { blockedDecision, blockLeft } from './block.js';
import { MemoryLeases } from './concurrency/memory-leases.js';
import type { Decision } from './decision.js';
import { describeValue, ErrorCode, SluiceError } from './errors.js';
import { MemoryBlocks } from './memory-blocks.js';
import { cellState } from './memory-cell.js';
import { stepTime } from './memory-in-place.js';
import { bytesOf, MemoryKeys } from './memory-keys.js';
import { batchStep, chargeStep, type LimitCall, type Store, UNCHANGED } from './store.js';
import { assertKnownOptions, integerOption } from './validate.js';

export interface MemoryStoreOptions {
  /**
   * Most keys stored across all limits. Past it, expired entries go first, then the least recently
   * written. Bounds memory under a flood of unique keys of small states.
   * @default 100_000
   */
  maxKeys?: number;
  /**
   * Most bytes of state stored across all limits, as `MemoryStore.bytesOf` estimates them (at least
   * what the heap measures: `scripts/memory-per-key.ts`); evicted as past `maxKeys`. Bounds memory
   * whatever the state sizes: a sliding window counter of precision 1000 holds ~8 KB per key, a
   * sliding window log 16 bytes per distinct millisecond it admitted in its window.
   * @default 67_108_864 (64 MiB)
   */
  maxBytes?: number;
  /** The clock used when a call supplies no `now`: ms since the epoch. @default Date.now */
  clock?: () => number;
}

const KNOWN = ['maxKeys', 'maxBytes', 'clock'] as const satisfies readonly (keyof MemoryStoreOptions)[];

/**
 * The zero-config store: one process, no I/O, answers synchronously. Its keys live in a
 * `MemoryKeys` (one space per algorithm fingerprint, two generations for cheap approximate-LRU
 * eviction, bounded by `maxKeys` and `maxBytes`, no timer per key); block records in
 * `MemoryBlocks`, concurrency leases in `MemoryLeases`.
 */
export class MemoryStore implements Store {
  /** Every answer is synchronous (`Limiter.checkSync` and `peekSync` rely on it). */
  readonly synchronous: boolean = true;
  readonly maxKeys: number;
  readonly clock: () => number;
  /** Concurrency leases, bounded by the same `maxKeys` (counted apart from limit keys). */
  readonly leases: MemoryLeases;
  readonly maxBytes: number;
  private readonly keys: MemoryKeys;
  /** Block records of limits with `block`, bounded by the same `maxKeys`. */
  private readonly blocks: MemoryBlocks;
  /** The time handed to the in-place steps (see `StepTime`). */
  private readonly time = stepTime();

  constructor(options: MemoryStoreOptions = {}) {
    assertKnownOptions('MemoryStore', options, KNOWN);
    this.maxKeys = integerOption('maxKeys', options.maxKeys ?? 100_000);
    this.maxBytes = integerOption('maxBytes', options.maxBytes ?? 64 * 1024 * 1024, 1024);
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `clock must be a function returning ms since the epoch; got ${describeValue(options.clock)}`,
        { option: 'clock', value: options.clock },
      );
    }
    this.clock = options.clock ?? Date.now;
    this.keys = new MemoryKeys(this.maxKeys, this.maxBytes);
    this.leases = new MemoryLeases(this.maxKeys, this.clock);
    this.blocks = new MemoryBlocks(this.maxKeys);
  }

  /** Keys currently stored, across all limits. */
  get keyCount(): number {
    return this.keys.size;
  }

  /** Bytes of state currently stored, across all limits, as {@link MemoryStore.bytesOf} estimates them. */
  get bytes(): number {
    return this.keys.bytes;
  }

  /**
   * The estimated heap cost of one key with `state`: the entry, the key text (two bytes per
   * UTF-16 unit, the worst case) and the state: 16 bytes for one number; for an array, 160 for
   * its header and the spare room of a small array, and 16 per number. Never below what the heap
   * measures for the built-in algorithms (`scripts/memory-per-key.ts`).
   */
  static bytesOf(key: string, state: unknown): number {
    return bytesOf(key, state);
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    if (calls.length === 1 && calls[0]!.block === undefined) {
      const call = calls[0]!;
      return [this.consumeOne(call.algorithm, call.key, call.cost, call.policy, at)];
    }
    const keys = this.keys;
    const spaces = calls.map((call) => keys.space(call.algorithm));
    const cells = calls.map((call, i) => keys.promoted(spaces[i]!, call.key));
    const { decisions, writes, blocks } = batchStep(
      calls,
      cells.map((cell) => (cell === undefined ? undefined : cellState(cell))),
      at,
      calls.map((call) =>
        call.block === undefined ? undefined : this.blocks.get(call.algorithm, call.key, at),
      ),
    );
    for (let i = 0; i < calls.length; i++) {
      const block = blocks[i]!;
      if (block !== UNCHANGED)
        this.blocks.set(calls[i]!.algorithm, calls[i]!.key, block.state, block.ttl, at);
    }
    for (let i = 0; i < calls.length; i++) {
      // Looked up again: an earlier write of this batch (a new key's insert) may have reclaimed or
      // evicted this key since it was read (a write into its old cell would be lost), or stored it.
      const cell = keys.promoted(spaces[i]!, calls[i]!.key);
      const next = writes[i];
      if (next === UNCHANGED) {
        if (cell !== undefined) keys.touch(spaces[i]!, calls[i]!.key, cell);
      } else if (cell !== undefined) {
        keys.update(spaces[i]!, calls[i]!.key, cell, next, at);
      } else if (next !== undefined) {
        keys.insert(spaces[i]!, calls[i]!.key, next, at);
      }
    }
    return decisions;
  }

  /**
   * The common single-limit case, without the batch's arrays: what `consume([call], now)` does
   * (`Store.consumeOne`): one map lookup, the algorithm's step, and the new state stored in the
   * key's cell.
   */
  consumeOne(
    algorithm: Algorithm,
    key: string,
    cost: number,
    policy: string,
    at: number | undefined,
  ): Decision {
    const now = at ?? this.clock();
    const keys = this.keys;
    const space = keys.space(algorithm);
    const cell = keys.promoted(space, key);
    if (cell === undefined) {
      const step = algorithm.consume(undefined, now, cost, policy);
      if (step.state !== undefined) keys.insert(space, key, step.state, now);
      return step.decision;
    }
    // The built-in algorithms' in-place steps write the new state into the cell (`memory-in-place.ts`).
    const inPlace = space.inPlace;
    if (inPlace !== undefined) {
      const length = inPlace.resizes ? (cell.state as number[]).length : 0;
      const time = this.time;
      time.now = now;
      const decision = inPlace.step(cell, time, cost, policy);
      if (decision !== undefined) {
        if (!decision.allowed) keys.touch(space, key, cell);
        // A log that grew or shrank: its bytes, and the bounds.
        else if (inPlace.resizes && (cell.state as number[]).length !== length)
          keys.update(space, key, cell, cell.state, now);
        return decision;
      }
    }
    const state = cellState(cell);
    const step = algorithm.consume(state, now, cost, policy);
    if (step.state !== state) keys.update(space, key, cell, step.state, now);
    else keys.touch(space, key, cell);
    return step.decision;
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    return calls.map((call) => {
      const left =
        call.block === undefined ? 0 : blockLeft(this.blocks.get(call.algorithm, call.key, at), at);
      if (left > 0) return blockedDecision(call.algorithm.limit, left, call.policy);
      return call.algorithm.peek(this.keys.stateOf(call.algorithm, call.key), at, call.cost, call.policy);
    });
  }

  reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): void {
    for (const call of calls) {
      this.blocks.delete(call.algorithm, call.key);
      const space = this.keys.existing(call.algorithm);
      if (space !== undefined) this.keys.remove(space, call.key);
    }
  }

  refund(calls: readonly LimitCall[], now: number | undefined): void {
    const at = now ?? this.clock();
    const keys = this.keys;
    for (const call of calls) {
      const space = keys.existing(call.algorithm);
      const cell = space === undefined ? undefined : keys.promoted(space, call.key);
      if (space === undefined || cell === undefined || call.algorithm.refund === undefined) continue;
      keys.update(space, call.key, cell, call.algorithm.refund(cellState(cell), at, call.cost), at);
    }
  }

  charge(calls: readonly LimitCall[], now: number | undefined): number[] {
    const at = now ?? this.clock();
    const keys = this.keys;
    return calls.map((call) => {
      const space = keys.space(call.algorithm);
      const cell = keys.promoted(space, call.key);
      const { state, taken } = chargeStep(call, cell === undefined ? undefined : cellState(cell), at);
      if (state === UNCHANGED) return taken;
      if (cell !== undefined) keys.update(space, call.key, cell, state, at);
      else if (state !== undefined) keys.insert(space, call.key, state, at);
      return taken;
    });
  }

  shutdown(): void {
    this.keys.clear();
    this.leases.clear();
    this.blocks.clear();
  }

  /** The stored state of one key, for tests and debugging. */
  inspect(algorithm: Algorithm, key: string): unknown {
    const state = this.keys.stateOf(algorithm, key);
    // A copy: the store updates some states in place (`memory-in-place.ts`).
    return Array.isArray(state) ? state.slice() : state;
  }
}
