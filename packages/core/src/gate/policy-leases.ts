import type { LeaseStore } from '../concurrency/lease-store.js';

interface Entry {
  /** Local time (ms) after which the lease has expired anyway. */
  readonly until: number;
  /** The fallback store's leases that hold it, or undefined when nothing holds it (fail open). */
  readonly store: LeaseStore | undefined;
}

/** Leases past which nobody is expected to still release a policy lease: kept as a bound only. */
const MAX_ENTRIES = 100_000;
/** Expired entries looked at from the old end per new entry. */
const SWEEP = 4;

/**
 * The leases the failure policy answered while the backend was unavailable, by id, so that their release
 * goes where they were taken: nowhere for a fail-open lease (its release is a no-op), the fallback
 * store for a fallback lease, never the backend. Bounded: entries leave when released, when their ttl has
 * passed, or, past `MAX_ENTRIES`, oldest first (a forgotten lease is released in the backend instead,
 * where it is harmlessly not found; a fallback lease then expires there after its ttl).
 */
export class PolicyLeases {
  private readonly entries = new Map<string, Entry>();

  /** Remembers lease `id`, held until `until` (local ms) by `store` (undefined: held nowhere). */
  add(id: string, until: number, store: LeaseStore | undefined, now: number): void {
    let swept = 0;
    for (const [old, entry] of this.entries) {
      if (++swept > SWEEP || entry.until > now) break;
      this.entries.delete(old);
    }
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(id, { until, store });
  }

  /** Forgets `id` and says where it was held: `undefined` when the policy never answered for it. */
  take(id: string): { store: LeaseStore | undefined } | undefined {
    const entry = this.entries.get(id);
    if (entry !== undefined) this.entries.delete(id);
    return entry;
  }

  /** Policy leases currently remembered. */
  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}
