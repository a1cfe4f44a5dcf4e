import { ErrorCode, SluiceError } from '@sluice/core';
import type { CallGate } from '@sluice/core/gate';
import type { Entry, LocalTable } from './local-table.js';

/**
 * The entries the next sync cycle sends (used, or pulled again: see `Entry.pulls`), each once.
 * Bounded: an evicted key's unsent consumption waits here for the next sync, so while no sync
 * runs (Redis away, or more new keys between two cycles than `maxKeys`) the queue would grow with
 * every new key. Past `2 × maxKeys` the evicted keys' consumption is dropped, and reported by the
 * next cycle (`operation: 'sync'`, `keys`: how many since the last report): the fleet never learns
 * of it, so it may admit that much more than the bound says. The keys still held (at most
 * `maxKeys`) stay queued.
 */
export class SyncQueue {
  private entries: Entry[] = [];
  /** Evicted keys whose unsent units were dropped since the last report (`reportDropped`). */
  private dropped = 0;

  constructor(
    private readonly maxKeys: number,
    private readonly table: LocalTable,
    private readonly gate: CallGate,
  ) {}

  /** Keys whose use waits for the next sync (at most `2 × maxKeys`). */
  get length(): number {
    return this.entries.length;
  }

  /** Puts a used entry in the next batch, and the one after (see `Entry.pulls`). */
  add(entry: Entry): void {
    entry.pulls = 2;
    if (entry.queued) return;
    entry.queued = true;
    if (this.entries.length >= 2 * this.maxKeys) this.dropEvicted();
    this.entries.push(entry);
  }

  /** Puts an entry back for the next batch without counting a use (a pull, a lost batch's entry). */
  readonly requeue = (entry: Entry): void => {
    if (entry.queued) return;
    entry.queued = true;
    this.entries.push(entry);
  };

  /** The queued entries, for a batch; the queue starts empty. */
  take(): Entry[] {
    const taken = this.entries;
    this.entries = [];
    return taken;
  }

  clear(): void {
    this.entries = [];
  }

  /** Reports the keys `dropEvicted` dropped since the last report: once per cycle, off the request path. */
  reportDropped(): void {
    const dropped = this.dropped;
    if (dropped === 0) return;
    this.dropped = 0;
    this.gate.report(
      'sync',
      dropped,
      new SluiceError(
        ErrorCode.STORE_FAILURE,
        `SyncedStore: the unsent consumption of ${dropped} evicted keys was dropped (more than maxKeys ${this.maxKeys} keys used since the last sync that reached Redis)`,
      ),
    );
  }

  private dropEvicted(): void {
    const kept: Entry[] = [];
    let dropped = 0;
    for (const entry of this.entries) {
      if (this.table.isCurrent(entry)) kept.push(entry);
      else {
        // Only unsent units are lost: a key only read (peek), or whose units wait in a lost batch
        // (sent again as it is), loses nothing.
        if (entry.delta !== undefined) dropped++;
        entry.queued = false;
        entry.delta = undefined;
      }
    }
    this.entries = kept;
    this.dropped += dropped;
  }
}
