/**
 * The least code that can do the job: a token bucket per key in a `Map`, mutated in place. No
 * validation, no decision object, no eviction, no expiry. Every subject is compared to this.
 */
export function inlineTokenBucket(capacity: number, perMs: number): (key: string, now: number) => boolean {
  const buckets = new Map<string, { tokens: number; last: number }>();
  return (key, now) => {
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: capacity, last: now };
      buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.last) * perMs);
      bucket.last = now;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };
}
