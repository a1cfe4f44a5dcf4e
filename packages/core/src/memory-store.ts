import type { Algorithm } from './algorithm.js';
import { blockedDecision, blockLeft } from './block.js';
import { MemoryLeases } from './concurrency/memory-leases.js';
import type { Decision } from './decision.js';
import { describeValue, ErrorCode, SluiceError } from './errors.js';
import { MemoryBlocks } from './memory-blocks.js';
import { chargeStep, type LimitCall, type Store, settleBatch, UNCHANGED } from './store.js';
import { assertKnownOptions, integerOption } from './validate.js';

export interface MemoryStoreOptions {
  /**
   * Most keys held across all limits. Past it, expired entries go first, then the least recently
   * written. Bounds memory under a flood of unique keys of small states.
   * @default 100_000
   */
  maxKeys?: number;
  /**
   * Most bytes of state held across all limits, as `MemoryStore.bytesOf` estimates them (at least
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

/** Entries at the old end looked at for an expired one before the least recent is evicted. */
const EXPIRY_SCAN = 8;

/**
 * A key's state, boxed: a write to a key that is already held replaces `state` in its cell, so a
 * decision costs one map lookup and no `set` (the second hash of the key is a third of the cost
 * of a decision on a 10,000-key map).
 */
interface Cell {
  /** The state, or `NUMBER` when it is one number (most algorithms): then it is in `number`. */
  state: unknown;
  /**
   * A one-number state. Only numbers are ever stored here, so V8 keeps the field as a double that
   * a write updates in place; a number written to `state` (which also holds arrays) would be a new
   * heap number on every decision (8% of the time in GC).
   */
  number: number;
  /** `bytesOf(key, state)`, kept so that a write or a removal can adjust the store's total. */
  bytes: number;
}

/** `Cell.state` of a one-number state. */
const NUMBER: unique symbol = Symbol('sluice.number');

function cellState(cell: Cell): unknown {
  return cell.state === NUMBER ? cell.number : cell.state;
}

function newCell(state: unknown, bytes: number): Cell {
  return typeof state === 'number' ? { state: NUMBER, number: state, bytes } : { state, number: 0.5, bytes };
}

/**
 * Bytes a key's entry costs beyond its state and key text: its slots in a generation's Map (with
 * the table's spare room), its cell, and the key string's header. Calibrated against the heap
 * (`scripts/memory-per-key.ts`) so that the estimate is never below what is measured.
 */
const ENTRY_BYTES = 160;

/**
 * One algorithm fingerprint's keys, in two generations (the scheme of quick-lru / hashlru). Keys
 * written since the last rotation live in `young` and are updated in place, so a decision costs
 * one lookup: exact LRU re-inserts on every write, and on a 10,000-key map that delete-and-append
 * churn costs several times the decision itself. Keys not written since
 * the last rotation are in `old`, in the order they were first written in their generation, and
 * leave from its front: so what goes first is (approximately) the least recently written. A write
 * to an old key moves it to `young`. When `old` is empty, `young` becomes `old` (a swap, O(1)).
 */
interface KeySpace {
  young: Map<string, Cell>;
  old: Map<string, Cell>;
  /** Walks `old` front to back; the entries it has passed and that are still in `old` are `front`. */
  cursor: Iterator<[string, Cell]> | undefined;
  /**
   * Up to EXPIRY_SCAN keys at the front of `old`, in order, and when each expires. An old entry's
   * state never changes (a write moves the key to `young`), so its expiry is computed once; a key
   * that has left `old` since is dropped when met.
   */
  readonly front: string[];
  readonly expiresAt: number[];
  readonly algorithm: Algorithm;
  /** ms an entry stays after its state went stale before a new key may reclaim it (see `reclaim`). */
  readonly grace: number;
  /** Bytes of the keys held in this space (see `MemoryStore.bytesOf`). */
  bytes: number;
}

/**
 * The zero-config store: one process, no I/O, answers synchronously. One key space per algorithm
 * fingerprint (so keys need no prefixing on the hot path), each in two generations for cheap
 * approximate-LRU eviction. Never more than `maxKeys` keys nor `maxBytes` of state (as `bytesOf`
 * estimates it; one state larger than that is kept alone); no timer per key: each new key
 * reclaims an entry at the old end that has been stale (expired) for a window of its limit, and
 * eviction takes expired entries before live ones.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number;
  readonly clock: () => number;
  /** Concurrency leases, bounded by the same `maxKeys` (counted apart from limit keys). */
  readonly leases: MemoryLeases;
  readonly maxBytes: number;
  private readonly spaces = new Map<string, KeySpace>();
  /** Block records of limits with `block`, bounded by the same `maxKeys`. */
  private readonly blocks: MemoryBlocks;
  private size = 0;
  private held = 0;
  /** The space of the last algorithm seen (spaces are never removed except by `shutdown`). */
  private lastAlgorithm: Algorithm | undefined;
  private lastSpace: KeySpace | undefined;

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
    this.leases = new MemoryLeases(this.maxKeys, this.clock);
    this.blocks = new MemoryBlocks(this.maxKeys);
  }

  /** Keys currently held, across all limits. */
  get keyCount(): number {
    return this.size;
  }

  /** Bytes of state currently held, across all limits, as {@link MemoryStore.bytesOf} estimates them. */
  get bytes(): number {
    return this.held;
  }

  /**
   * The estimated heap cost of one key holding `state`: the entry, the key text (two bytes per
   * UTF-16 unit, the worst case) and the state: 16 bytes for one number; for an array, 160 for
   * its header and the spare room of a small array, and 16 per number (8 for the double, as much
   * again for the capacity an array grown by `splice` or spread may carry). Never below what the
   * heap measures for the built-in algorithms (`scripts/memory-per-key.ts`).
   */
  static bytesOf(key: string, state: unknown): number {
    return (
      ENTRY_BYTES +
      2 * key.length +
      (typeof state === 'number' ? 16 : 160 + 16 * (state as readonly number[]).length)
    );
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    if (calls.length === 1 && calls[0]!.block === undefined) {
      const call = calls[0]!;
      return [this.consumeOne(call.algorithm, call.key, call.cost, call.policy, at)];
    }
    const spaces = calls.map((call) => this.space(call.algorithm));
    const cells = calls.map((call, i) => this.promoted(spaces[i]!, call.key));
    const { decisions, writes, blocks } = settleBatch(
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
      const cell = cells[i];
      const next = writes[i];
      if (next === UNCHANGED) {
        if (cell !== undefined) touch(spaces[i]!, calls[i]!.key, cell);
      } else if (cell !== undefined) {
        this.update(spaces[i]!, calls[i]!.key, cell, next, at);
      } else if (next !== undefined) {
        this.insert(spaces[i]!, calls[i]!.key, next, at);
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
    const space = algorithm === this.lastAlgorithm ? this.lastSpace! : this.space(algorithm);
    const cell = space.young.get(key) ?? this.fromOld(space, key);
    if (cell === undefined) {
      const step = algorithm.consume(undefined, now, cost, policy);
      if (step.state !== undefined) this.insert(space, key, step.state, now);
      return step.decision;
    }
    const state = cellState(cell);
    const step = algorithm.consume(state, now, cost, policy);
    if (step.state !== state) this.update(space, key, cell, step.state, now);
    else touch(space, key, cell);
    return step.decision;
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    return calls.map((call) => {
      const left =
        call.block === undefined ? 0 : blockLeft(this.blocks.get(call.algorithm, call.key, at), at);
      if (left > 0) return blockedDecision(call.algorithm.limit, left, call.policy);
      return call.algorithm.peek(this.stateOf(call.algorithm, call.key), at, call.cost, call.policy);
    });
  }

  reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): void {
    for (const call of calls) {
      this.blocks.delete(call.algorithm, call.key);
      const space = this.spaces.get(call.algorithm.fingerprint);
      if (space !== undefined) this.remove(space, call.key);
    }
  }

  refund(calls: readonly LimitCall[], now: number | undefined): void {
    const at = now ?? this.clock();
    for (const call of calls) {
      const space = this.spaces.get(call.algorithm.fingerprint);
      const cell = space === undefined ? undefined : this.promoted(space, call.key);
      if (space === undefined || cell === undefined || call.algorithm.refund === undefined) continue;
      this.update(space, call.key, cell, call.algorithm.refund(cellState(cell), at, call.cost), at);
    }
  }

  charge(calls: readonly LimitCall[], now: number | undefined): number[] {
    const at = now ?? this.clock();
    return calls.map((call) => {
      const space = this.space(call.algorithm);
      const cell = this.promoted(space, call.key);
      const { state, taken } = chargeStep(call, cell === undefined ? undefined : cellState(cell), at);
      if (state === UNCHANGED) return taken;
      if (cell !== undefined) this.update(space, call.key, cell, state, at);
      else if (state !== undefined) this.insert(space, call.key, state, at);
      return taken;
    });
  }

  shutdown(): void {
    this.spaces.clear();
    this.lastAlgorithm = this.lastSpace = undefined;
    this.size = 0;
    this.held = 0;
    this.leases.clear();
    this.blocks.clear();
  }

  /** The stored state of one key, for tests and debugging. */
  inspect(algorithm: Algorithm, key: string): unknown {
    return this.stateOf(algorithm, key);
  }

  private stateOf(algorithm: Algorithm, key: string): unknown {
    const space = this.spaces.get(algorithm.fingerprint);
    if (space === undefined) return undefined;
    const cell = space.young.get(key) ?? space.old.get(key);
    return cell === undefined ? undefined : cellState(cell);
  }

  /**
   * A key's cell, in the young generation: a key found in the old one is moved (it is being
   * written or refused now, and either counts as recent use). `undefined` for a key not held.
   */
  private promoted(space: KeySpace, key: string): Cell | undefined {
    return space.young.get(key) ?? this.fromOld(space, key);
  }

  /** `promoted` for a key known not to be young. */
  private fromOld(space: KeySpace, key: string): Cell | undefined {
    if (space.old.size === 0) return undefined;
    const old = space.old.get(key);
    if (old !== undefined) {
      space.old.delete(key);
      space.young.set(key, old);
    }
    return old;
  }

  private space(algorithm: Algorithm): KeySpace {
    // One limiter per store is the common case: skip the lookup by fingerprint when it repeats.
    if (algorithm === this.lastAlgorithm) return this.lastSpace!;
    let space = this.spaces.get(algorithm.fingerprint);
    if (space === undefined) {
      space = {
        young: new Map(),
        old: new Map(),
        cursor: undefined,
        front: [],
        expiresAt: [],
        algorithm,
        grace: Number.isFinite(algorithm.window) ? Math.max(0, algorithm.window) : 0,
        bytes: 0,
      };
      this.spaces.set(algorithm.fingerprint, space);
    }
    this.lastAlgorithm = algorithm;
    this.lastSpace = space;
    return space;
  }

  /**
   * A held key's new state (in its cell: the hot path), or its removal when `next` is undefined. A
   * state that grows (a sliding window log) may evict other keys past maxBytes.
   */
  private update(space: KeySpace, key: string, cell: Cell, next: unknown, now: number): void {
    if (next === undefined) {
      this.remove(space, key);
      return;
    }
    if (typeof next === 'number') {
      cell.number = next;
      // A one-number state stays one number: its size cannot change.
      if (cell.state === NUMBER) return;
      cell.state = NUMBER;
    } else {
      cell.state = next;
    }
    const bytes = MemoryStore.bytesOf(key, next);
    if (bytes === cell.bytes) return;
    this.held += bytes - cell.bytes;
    space.bytes += bytes - cell.bytes;
    cell.bytes = bytes;
    this.bound(space, key, bytes, now);
  }

  /** A key not held gets its first state: it may reclaim an expired key, or evict one past the bounds. */
  private insert(space: KeySpace, key: string, state: unknown, now: number): void {
    const bytes = MemoryStore.bytesOf(key, state);
    space.young.set(key, newCell(state, bytes));
    this.size++;
    this.held += bytes;
    space.bytes += bytes;
    this.reclaim(space, now);
    this.bound(space, key, bytes, now);
  }

  /**
   * Evicts until both bounds hold, never the key just written (`key`, of `bytes`): a single state
   * larger than maxBytes (a sliding window log of a huge limit) is kept, alone.
   */
  private bound(space: KeySpace, key: string, bytes: number, now: number): void {
    while (
      (this.size > this.maxKeys || this.held > this.maxBytes) &&
      this.size > 1 &&
      this.evict(space, key, bytes, now)
    );
  }

  private remove(space: KeySpace, key: string): void {
    const cell = space.young.get(key) ?? space.old.get(key);
    if (cell === undefined) return;
    if (!space.young.delete(key)) space.old.delete(key);
    this.dropped(space, cell);
  }

  /** Books a removed key. */
  private dropped(space: KeySpace, cell: Cell): void {
    this.size--;
    this.held -= cell.bytes;
    space.bytes -= cell.bytes;
  }

  /**
   * Each new key reclaims the oldest entry of its space once it has been stale (expired) for a
   * window of its limit (`grace`): no timer needed. Not as soon as it expires: a client under its
   * limit whose bucket is full again between two visits would be dropped and re-inserted on every
   * visit, and each re-insert would reclaim the next client due back (10,000 clients at one
   * request a second took the insert path on every decision, at a third of the speed of a kept
   * entry). A stale entry that is kept answers exactly as no entry would, and the bounds (maxKeys,
   * maxBytes) still evict expired entries first, with no grace.
   */
  private reclaim(space: KeySpace, now: number): void {
    refill(space, now);
    const { front, expiresAt } = space;
    // A key at the front that has left `old` since it was scanned (written again) is passed over at
    // the same time, not before: the rotation that an empty front brings costs every live key a
    // move between generations on its next write.
    if (front.length !== 0 && expiresAt[0]! + space.grace <= now) {
      const cell = space.old.get(front[0]!);
      if (cell !== undefined) {
        space.old.delete(front[0]!);
        this.dropped(space, cell);
      }
      front.shift();
      expiresAt.shift();
    }
  }

  /** Evicts one key; false only if there was none to evict (then the count is already 0). */
  private evict(writing: KeySpace, written: string, writtenBytes: number, now: number): boolean {
    // From the space holding the most keys (the most bytes, past maxBytes), the key just written
    // not counted: a flood of unique keys lands in one space and so evicts its own keys first.
    // Ties go to another space.
    const byBytes = this.size <= this.maxKeys;
    const weight = (space: KeySpace) => (byBytes ? space.bytes : space.young.size + space.old.size);
    let victim = writing;
    let most = weight(writing) - (byBytes ? writtenBytes : 1);
    for (const space of this.spaces.values()) {
      const held = weight(space);
      if (space !== writing && held > most) {
        victim = space;
        most = held;
      }
    }
    const { front, expiresAt } = victim;
    for (;;) {
      refill(victim, now);
      // Never the key just written (a rotation may have brought it to the front).
      let candidates = front.length;
      if (victim === writing) for (const key of front) if (key === written) candidates--;
      if (candidates === 0) return false;
      // Expired first, a few entries deep; then the least recently written.
      let chosen = front[0] === written && victim === writing ? 1 : 0;
      for (let i = 0; i < front.length; i++) {
        if (expiresAt[i]! <= now && !(victim === writing && front[i] === written)) {
          chosen = i;
          break;
        }
      }
      // `refill` may have rotated the generations: read `old` after it.
      const old = victim.old;
      const removed = old.get(front[chosen]!);
      if (removed !== undefined) old.delete(front[chosen]!);
      front.splice(chosen, 1);
      expiresAt.splice(chosen, 1);
      if (removed !== undefined) {
        this.dropped(victim, removed);
        return true;
      }
    }
  }
}

/**
 * A refused key moves to the back of the young generation, as if written now: a client that keeps
 * being refused must never age out under a flood of new keys, since forgetting it would reset its
 * limit. (Allowed writes update in place and keep their place in the generation: the re-insert
 * that costs here is paid only by refused requests.)
 */
function touch(space: KeySpace, key: string, cell: Cell): void {
  space.young.delete(key);
  space.young.set(key, cell);
}

/**
 * Brings `front` up to EXPIRY_SCAN entries of the old generation. When the cursor has passed every
 * old entry and fewer than EXPIRY_SCAN remain, the young generation joins the back of the old one
 * (a swap when the old one is empty). Amortised O(1): each key is appended and visited once per
 * generation.
 */
function refill(space: KeySpace, now: number): void {
  const { front, expiresAt } = space;
  for (;;) {
    while (front.length < EXPIRY_SCAN && space.cursor !== undefined) {
      const next = space.cursor.next();
      if (next.done) {
        space.cursor = undefined;
      } else {
        front.push(next.value[0]);
        expiresAt.push(now + space.algorithm.ttl(cellState(next.value[1]), now));
      }
    }
    if (front.length >= EXPIRY_SCAN || space.young.size === 0) return;
    // The cursor has passed every old entry: those left are in `front` (with keys that have left
    // since). Append the young generation behind them and start the cursor at its first key.
    // Every key in `front` must be in `old` after a rotation: a key that left and came back
    // with the young generation would otherwise be evicted by its stale entry.
    const start = liveFront(space);
    if (start === 0) {
      space.old = space.young;
    } else {
      for (const [key, cell] of space.young) space.old.set(key, cell);
    }
    space.young = new Map();
    space.cursor = space.old.entries();
    for (let i = 0; i < start; i++) space.cursor.next();
  }
}

/** Drops keys that have left `old` from `front`; returns how many remain (all of `old`, in order). */
function liveFront(space: KeySpace): number {
  const { front, expiresAt } = space;
  let kept = 0;
  for (let i = 0; i < front.length; i++) {
    if (space.old.has(front[i]!)) {
      front[kept] = front[i]!;
      expiresAt[kept++] = expiresAt[i]!;
    }
  }
  // Popped, not truncated: `length =` is a runtime call, and this runs on every rotation.
  while (front.length > kept) {
    front.pop();
    expiresAt.pop();
  }
  return kept;
}
