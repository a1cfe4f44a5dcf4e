/**
 * The expiry index: one LMDB key per stored key, `second (6 bytes, big-endian) + stored key`, so
 * that LMDB keeps the keys in the order they expire and the sweep reads only those due. A key's
 * entry is a lower bound of its expiry: the second of its expiry when it was indexed, moved
 * earlier by a write that shortens it, but left alone by the usual write that pushes it later (a
 * busy key's every request would otherwise cost two more B-tree writes). When the sweep reaches
 * an entry whose key has not expired after all, it moves the entry to the key's real second: one
 * visit per key per lifetime at most, and a key written once and left is visited once, when it
 * has expired. Seconds, not milliseconds: `ceil(expiresAt / 1000)`, so every key listed under
 * second `s` is as good as new at `s × 1000` ms, or was pushed later.
 */

const SECOND_BYTES = 6;
const LAST_SECOND = 2 ** (8 * SECOND_BYTES) - 1;

export const NO_VALUE = Buffer.alloc(0);

/** The second an expiry (ms since the epoch) falls in. */
export function expirySecond(expiresAt: number): number {
  return Math.min(Math.max(0, Math.ceil(expiresAt / 1000)), LAST_SECOND);
}

/** The index key of a stored key expiring in `second`. */
export function indexKey(second: number, key: Buffer): Buffer {
  const out = Buffer.allocUnsafe(SECOND_BYTES + key.length);
  out.writeUIntBE(second, 0, SECOND_BYTES);
  key.copy(out, SECOND_BYTES);
  return out;
}

/** The first index key past every key that has expired at `now` (the end of the sweep's range). */
export function expiredEnd(now: number): Buffer {
  const out = Buffer.allocUnsafe(SECOND_BYTES);
  out.writeUIntBE(Math.min(Math.floor(now / 1000) + 1, LAST_SECOND), 0, SECOND_BYTES);
  return out;
}

/** The second and the stored key an index key names. */
export function readIndexKey(key: Buffer): [second: number, stored: Buffer] {
  return [key.readUIntBE(0, SECOND_BYTES), key.subarray(SECOND_BYTES)];
}
