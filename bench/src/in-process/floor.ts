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

/** The fields of a rate-limit answer that HTTP headers need, as sluice's `Decision` carries them. */
export interface FloorDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly resetAfter: number;
  readonly retryAfter: number;
}

/**
 * The floor, answering with what a rate limiter must tell an HTTP adapter (units left, when the
 * bucket is full again, when to retry) instead of a boolean: one object per decision. For
 * diagnosis: it shows what a decision object costs next to the boolean floor.
 */
export function inlineTokenBucketDecision(
  capacity: number,
  perMs: number,
): (key: string, now: number) => FloorDecision {
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
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return {
      allowed,
      limit: capacity,
      remaining: Math.floor(bucket.tokens),
      resetAfter: Math.ceil((capacity - bucket.tokens) / perMs),
      retryAfter: allowed ? 0 : Math.ceil((1 - bucket.tokens) / perMs),
    };
  };
}
