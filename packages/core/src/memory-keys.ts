import type { Algorithm } from './algorithm.js';
import { FingerprintMap } from './fingerprint-map.js';
import { type Cell, cellState, NUMBER } from './memory-cell.js';
import { type InPlace, inPlaceStep } from './memory-in-place.js';

/** Entries at the old end looked at for an expired one before the least recent is evicted. */
const EXPIRY_SCAN = 8;

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
 * The estimated heap cost of one key with `state`: the entry, the key text (two bytes per UTF-16
 * unit, the worst case) and the state: 16 bytes for one number; for an array, 160 for its header
 * and the spare room of a small array, and 16 per number (8 for the double, as much again for the
 * capacity an array grown by `splice` or spread may carry). Never below what the heap measures
 * for the built-in algorithms (`scripts/memory-per-key.ts`).
 */
export function bytesOf(key: string, state: unknown): number {
  return (
    ENTRY_BYTES +
    2 * key.length +
    (typeof state === 'number' ? 16 : 160 + 16 * (state as readonly number[]).length)
  );
}

/**
 * One algorithm fingerprint's keys, in two generations (the scheme of quick-lru / hashlru). Keys
 * written since the last rotation live in `young` and are updated in place, so a decision costs
 * one lookup: exact LRU re-inserts on every write, and on a 10,000-key map that delete-and-append
 * churn costs several times the decision itself. Keys not written since
 * the last rotation are in `old`, in the order they were first written in their generation, and
 * leave from its front: so what goes first is (approximately) the least recently written. A write
 * to an old key moves it to `young`. When `old` is empty, `young` becomes `old` (a swap, O(1)).
 */
export interface KeySpace {
  young: Map<string, Cell>;
  old: Map<string, Cell>;
  /**
   * Walks `old`'s keys front to back; the keys it has passed and that are still in `old` are
   * `front`. Keys, not entries: an entry would be a new [key, cell] array per key.
   */
  cursor: Iterator<string> | undefined;
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
  /** Bytes of the keys in this space (see `bytesOf`). */
  bytes: number;
  /** The algorithm's in-place twin, where it has one (`memory-in-place.ts`). */
  readonly inPlace: InPlace | undefined;
}

/**
 * The memory store's key space: one `KeySpace` per algorithm fingerprint (so keys need no
 * prefixing on the hot path), each in two generations for cheap approximate-LRU eviction, never
 * more than `maxKeys` keys nor `maxBytes` of state (as `bytesOf` estimates it; one state larger
 * than that is kept alone). No timer per key: each new key reclaims an entry at the old end that
 * has been stale (expired) for a window of its limit, and eviction takes expired entries before
 * live ones.
 */
export class MemoryKeys {
  private readonly spaces = new FingerprintMap<KeySpace>(newSpace);
  private count = 0;
  private byteTotal = 0;

  constructor(
    private readonly maxKeys: number,
    private readonly maxBytes: number,
  ) {}

  /** Keys stored, across all spaces. */
  get size(): number {
    return this.count;
  }

  /** Bytes of state stored, across all spaces, as `bytesOf` estimates them. */
  get bytes(): number {
    return this.byteTotal;
  }

  /** The space of `algorithm`'s fingerprint, made on first use. */
  space(algorithm: Algorithm): KeySpace {
    return this.spaces.of(algorithm);
  }

  /** The space of `algorithm`'s fingerprint if it has one (nothing is made). */
  existing(algorithm: Algorithm): KeySpace | undefined {
    return this.spaces.existing(algorithm);
  }

  /** The stored state of one key, without moving it between generations. */
  stateOf(algorithm: Algorithm, key: string): unknown {
    const space = this.spaces.existing(algorithm);
    if (space === undefined) return undefined;
    const cell = space.young.get(key) ?? space.old.get(key);
    return cell === undefined ? undefined : cellState(cell);
  }

  /**
   * A key's cell, in the young generation: a key found in the old one is moved (it is being
   * written or refused now, and either counts as recent use). `undefined` for a key not stored.
   */
  promoted(space: KeySpace, key: string): Cell | undefined {
    const young = space.young.get(key);
    if (young !== undefined || space.old.size === 0) return young;
    const old = space.old.get(key);
    if (old !== undefined) {
      space.old.delete(key);
      space.young.set(key, old);
    }
    return old;
  }

  /**
   * A stored key's new state (in its cell: the hot path), or its removal when `next` is
   * undefined. A state that grows (a sliding window log) may evict other keys past maxBytes.
   */
  update(space: KeySpace, key: string, cell: Cell, next: unknown, now: number): void {
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
    const bytes = bytesOf(key, next);
    if (bytes === cell.bytes) return;
    this.byteTotal += bytes - cell.bytes;
    space.bytes += bytes - cell.bytes;
    cell.bytes = bytes;
    this.bound(space, key, bytes, now);
  }

  /** A key not stored gets its first state: it may reclaim an expired key, or evict one past the bounds. */
  insert(space: KeySpace, key: string, state: unknown, now: number): void {
    const bytes = bytesOf(key, state);
    space.young.set(key, newCell(state, bytes));
    this.count++;
    this.byteTotal += bytes;
    space.bytes += bytes;
    this.reclaim(space, now);
    this.bound(space, key, bytes, now);
  }

  /**
   * A refused key moves to the back of the young generation, as if written now: a client that
   * keeps being refused must never age out under a flood of new keys, since forgetting it would
   * reset its limit. (Allowed writes update in place and keep their place in the generation: the
   * re-insert that costs here is paid only by refused requests.)
   */
  touch(space: KeySpace, key: string, cell: Cell): void {
    space.young.delete(key);
    space.young.set(key, cell);
  }

  remove(space: KeySpace, key: string): void {
    const cell = space.young.get(key) ?? space.old.get(key);
    if (cell === undefined) return;
    if (!space.young.delete(key)) space.old.delete(key);
    this.dropped(space, cell);
  }

  clear(): void {
    this.spaces.clear();
    this.count = 0;
    this.byteTotal = 0;
  }

  /**
   * Evicts until both bounds hold, never the key just written (`key`, of `bytes`): a single state
   * larger than maxBytes (a sliding window log of a huge limit) is kept, alone.
   */
  private bound(space: KeySpace, key: string, bytes: number, now: number): void {
    while (
      (this.count > this.maxKeys || this.byteTotal > this.maxBytes) &&
      this.count > 1 &&
      this.evict(space, key, bytes, now)
    );
  }

  /** Books a removed key. */
  private dropped(space: KeySpace, cell: Cell): void {
    this.count--;
    this.byteTotal -= cell.bytes;
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
      removeAt(front, 0);
      removeAt(expiresAt, 0);
    }
  }

  /** Evicts one key; false only if there was none to evict (then the count is already 0). */
  private evict(writing: KeySpace, written: string, writtenBytes: number, now: number): boolean {
    // From the space with the most keys (the most bytes, past maxBytes), the key just written
    // not counted: a flood of unique keys lands in one space and so evicts its own keys first.
    // Ties go to another space.
    const byBytes = this.count <= this.maxKeys;
    let victim = writing;
    // One space (one limit on this store, the common case): no other to weigh.
    if (this.spaces.size > 1) {
      let most = weight(writing, byBytes) - (byBytes ? writtenBytes : 1);
      for (const space of this.spaces.all()) {
        const stored = weight(space, byBytes);
        if (space !== writing && stored > most) {
          victim = space;
          most = stored;
        }
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
      removeAt(front, chosen);
      removeAt(expiresAt, chosen);
      if (removed !== undefined) {
        this.dropped(victim, removed);
        return true;
      }
    }
  }
}

/** A new fingerprint's space, empty. */
function newSpace(algorithm: Algorithm): KeySpace {
  return {
    young: new Map(),
    old: new Map(),
    cursor: undefined,
    front: [],
    expiresAt: [],
    algorithm,
    grace: Number.isFinite(algorithm.window) ? Math.max(0, algorithm.window) : 0,
    bytes: 0,
    inPlace: inPlaceStep(algorithm),
  };
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
        front.push(next.value);
        expiresAt.push(now + space.algorithm.ttl(cellState(space.old.get(next.value)!), now));
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
    space.cursor = space.old.keys();
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

/** How much of the bounds a space holds: its bytes past `maxBytes`, else its keys. */
function weight(space: KeySpace, byBytes: boolean): number {
  return byBytes ? space.bytes : space.young.size + space.old.size;
}

/**
 * Removes `array[index]`, moving the rest down: `splice` would make an array of the removed
 * element, and `shift` may trim the array's start, so that the next `push` grows it again.
 */
function removeAt<T>(array: T[], index: number): void {
  if (index >= array.length) return;
  for (let i = index + 1; i < array.length; i++) array[i - 1] = array[i]!;
  array.pop();
}
