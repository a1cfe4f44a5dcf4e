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

/** Entries at the old end looked at for an expired one before the least recent is evicted. */
const EXPIRY_SCAN = 8;

/**
 * One algorithm fingerprint's keys, in two generations (the scheme of quick-lru / hashlru). Keys
 * written since the last rotation live in `young` and are updated in place, so a decision costs
 * one lookup and one in-place `set`: exact LRU re-inserts on every write, and on a 10,000-key map
 * that delete-and-append churn costs several times the decision itself. Keys not written since
 * the last rotation are in `old`, in the order they were first written in their generation, and
 * leave from its front: so what goes first is (approximately) the least recently written. A write
 * to an old key moves it to `young`. When `old` is empty, `young` becomes `old` (a swap, O(1)).
 */
interface KeySpace {
  young: Map<string, unknown>;
  old: Map<string, unknown>;
  /** Walks `old` front to back; the entries it has passed and that are still in `old` are `front`. */
  cursor: Iterator<[string, unknown]> | undefined;
  /**
   * Up to EXPIRY_SCAN keys at the front of `old`, in order, and when each expires. An old entry's
   * state never changes (a write moves the key to `young`), so its expiry is computed once; a key
   * that has left `old` since is dropped when met.
   */
  readonly front: string[];
  readonly expiresAt: number[];
  readonly algorithm: Algorithm;
}

/**
 * The zero-config store: one process, no I/O, answers synchronously. One key space per algorithm
 * fingerprint (so keys need no prefixing on the hot path), each in two generations for cheap
 * approximate-LRU eviction. Never more than `maxKeys` keys; no timer per key: each new key
 * reclaims an expired entry at the old end, and eviction takes expired entries before live ones.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number;
  readonly clock: () => number;
  /** Concurrency leases, bounded by the same `maxKeys` (counted apart from limit keys). */
  readonly leases: MemoryLeases;
  private readonly spaces = new Map<string, KeySpace>();
  private size = 0;
  /** The space of the last algorithm seen (spaces are never removed except by `shutdown`). */
  private lastAlgorithm: Algorithm | undefined;
  private lastSpace: KeySpace | undefined;

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
    const states = calls.map((call, i) => read(spaces[i]!, call.key));
    const { decisions, writes } = settleBatch(calls, states, at);
    for (let i = 0; i < calls.length; i++) {
      const next = writes[i];
      if (next !== UNCHANGED) this.write(spaces[i]!, calls[i]!.key, next, states[i] !== undefined, at);
      else if (states[i] !== undefined) touch(spaces[i]!, calls[i]!.key, states[i]);
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
    const state = read(space, key);
    const step = algorithm.consume(state, now, cost, policy);
    if (step.state !== state) this.write(space, key, step.state, state !== undefined, now);
    else if (state !== undefined) touch(space, key, state);
    return step.decision;
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    return calls.map((call) =>
      call.algorithm.peek(this.stateOf(call.algorithm, call.key), at, call.cost, call.policy),
    );
  }

  reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): void {
    for (const call of calls) {
      const space = this.spaces.get(call.algorithm.fingerprint);
      if (space !== undefined) this.remove(space, call.key);
    }
  }

  refund(calls: readonly LimitCall[], now: number | undefined): void {
    const at = now ?? this.clock();
    for (const call of calls) {
      const space = this.spaces.get(call.algorithm.fingerprint);
      const state = space === undefined ? undefined : read(space, call.key);
      if (space === undefined || state === undefined || call.algorithm.refund === undefined) continue;
      const next = call.algorithm.refund(state, at, call.cost);
      if (next !== undefined) this.write(space, call.key, next, true, at);
      else this.remove(space, call.key);
    }
  }

  shutdown(): void {
    this.spaces.clear();
    this.lastAlgorithm = this.lastSpace = undefined;
    this.size = 0;
    this.leases.clear();
  }

  /** The stored state of one key, for tests and debugging. */
  inspect(algorithm: Algorithm, key: string): unknown {
    return this.stateOf(algorithm, key);
  }

  private stateOf(algorithm: Algorithm, key: string): unknown {
    const space = this.spaces.get(algorithm.fingerprint);
    return space === undefined ? undefined : read(space, key);
  }

  private space(algorithm: Algorithm): KeySpace {
    // One limiter per store is the common case: skip the lookup by fingerprint when it repeats.
    if (algorithm === this.lastAlgorithm) return this.lastSpace!;
    let space = this.spaces.get(algorithm.fingerprint);
    if (space === undefined) {
      space = { young: new Map(), old: new Map(), cursor: undefined, front: [], expiresAt: [], algorithm };
      this.spaces.set(algorithm.fingerprint, space);
    }
    this.lastAlgorithm = algorithm;
    this.lastSpace = space;
    return space;
  }

  private write(space: KeySpace, key: string, next: unknown, existed: boolean, now: number): void {
    if (next === undefined) {
      this.remove(space, key);
      return;
    }
    const young = space.young;
    const before = young.size;
    young.set(key, next);
    if (young.size === before) return; // written in place: the hot path
    if (existed) {
      // Promoted from the old generation: same key count.
      space.old.delete(key);
      return;
    }
    this.size++;
    this.reclaim(space, now);
    while (this.size > this.maxKeys && this.evict(space, now));
  }

  private remove(space: KeySpace, key: string): void {
    if (space.young.delete(key) || space.old.delete(key)) this.size--;
  }

  /** Each new key reclaims the oldest entry of its space if it has expired: no timer needed. */
  private reclaim(space: KeySpace, now: number): void {
    refill(space, now);
    if (space.front.length !== 0 && space.expiresAt[0]! <= now) {
      if (space.old.delete(space.front[0]!)) this.size--;
      space.front.shift();
      space.expiresAt.shift();
    }
  }

  /** Evicts one key; false only if there was none to evict (then the count is already 0). */
  private evict(writing: KeySpace, now: number): boolean {
    // From the space holding the most keys: a flood of unique keys lands in one space and so
    // evicts its own keys first. Ties go to another space, so the key just written stays.
    let victim = writing;
    let most = writing.young.size + writing.old.size - 1;
    for (const space of this.spaces.values()) {
      const held = space.young.size + space.old.size;
      if (space !== writing && held > most) {
        victim = space;
        most = held;
      }
    }
    const { front, expiresAt, old } = victim;
    for (;;) {
      refill(victim, now);
      if (front.length === 0) return false;
      // Expired first, a few entries deep; then the least recently written.
      let chosen = 0;
      for (let i = 0; i < front.length; i++) {
        if (expiresAt[i]! <= now) {
          chosen = i;
          break;
        }
      }
      const removed = old.delete(front[chosen]!);
      front.splice(chosen, 1);
      expiresAt.splice(chosen, 1);
      if (removed) {
        this.size--;
        return true;
      }
    }
  }
}

/** A key's state: the young generation first (where hot keys live), then the old. */
function read(space: KeySpace, key: string): unknown {
  const state = space.young.get(key);
  return state !== undefined || space.old.size === 0 ? state : space.old.get(key);
}

/**
 * A refused key moves to the back of the young generation, as if written now: a client that keeps
 * being refused must never age out under a flood of new keys, since forgetting it would reset its
 * limit. (Allowed writes update in place and keep their place in the generation: the re-insert
 * that costs here is paid only by refused requests.)
 */
function touch(space: KeySpace, key: string, state: unknown): void {
  if (!space.young.delete(key)) space.old.delete(key);
  space.young.set(key, state);
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
        expiresAt.push(now + space.algorithm.ttl(next.value[1], now));
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
      for (const [key, state] of space.young) space.old.set(key, state);
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
  front.length = kept;
  expiresAt.length = kept;
  return kept;
}
