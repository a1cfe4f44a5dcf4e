import type { Algorithm } from './algorithm.js';

/**
 * One value per algorithm fingerprint (a store's key space per limit), made on first use. The
 * last algorithm asked for is remembered: one limiter per store is the common case, and it then
 * costs no lookup by fingerprint.
 */
export class FingerprintMap<V> {
  private readonly values = new Map<string, V>();
  private lastAlgorithm: Algorithm | undefined;
  private lastValue: V | undefined;

  constructor(private readonly make: (algorithm: Algorithm) => V) {}

  /** The value of `algorithm`'s fingerprint, made if it has none. */
  of(algorithm: Algorithm): V {
    if (algorithm === this.lastAlgorithm) return this.lastValue!;
    let value = this.values.get(algorithm.fingerprint);
    if (value === undefined) {
      value = this.make(algorithm);
      this.values.set(algorithm.fingerprint, value);
    }
    this.lastAlgorithm = algorithm;
    this.lastValue = value;
    return value;
  }

  /** The value of `algorithm`'s fingerprint if it has one (nothing is made). */
  existing(algorithm: Algorithm): V | undefined {
    return this.values.get(algorithm.fingerprint);
  }

  /** How many fingerprints have a value. */
  get size(): number {
    return this.values.size;
  }

  all(): IterableIterator<V> {
    return this.values.values();
  }

  clear(): void {
    this.values.clear();
    this.lastAlgorithm = this.lastValue = undefined;
  }
}
