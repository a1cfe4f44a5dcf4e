import { createHash } from 'node:crypto';

/**
 * The longest key stored as it is, in bytes (sluice-server refuses longer ones; HostStore stores
 * their digest). LMDB keys are at most 1,978 bytes in lmdb-js; a
 * stored key adds an 8-byte digest and its expiry index entry (expiry-index.ts) 6 bytes more,
 * which leaves 1,964: 1,900 keeps some room for the layout to change. A rate limit key longer
 * than that is a bug or an attack (hash it).
 */
export const MAX_KEY_BYTES = 1900;

/** Bytes of the digest that stands for a key's prefix (algorithm, parameters, namespace). */
const DIGEST_BYTES = 8;

const digests = new Map<string, string>();

// biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is U+0000 to U+007F
const ASCII = /^[\x00-\x7f]*$/;

/**
 * The stored key (as a latin1 string, one char per byte) of a client key under `prefix`: an
 * 8-byte digest (SHA-256) of the prefix, then the key's bytes. The prefix names everything that
 * makes two buckets different besides the key (Smyte's parameters, a sluice algorithm's full
 * spec and id, a lease space); it used to be stored in full, about 100 bytes per `SL.*` key,
 * which spread the same keys over three times the pages. Two prefixes share buckets only if their
 * 64-bit digests collide (about one chance in 10^19 for a pair).
 */
export function storedId(prefix: string, key: Buffer): string {
  return digestOf(prefix) + key.toString('latin1');
}

/**
 * `storedId` of a string key's UTF-8 bytes (a lone surrogate as U+FFFD, as `Buffer.from` writes
 * it). An ASCII key, the common case, is its own latin1 form: no Buffer is made for it.
 */
export function storedIdOfText(prefix: string, key: string): string {
  return ASCII.test(key) ? digestOf(prefix) + key : storedId(prefix, Buffer.from(key, 'utf8'));
}

function digestOf(prefix: string): string {
  let digest = digests.get(prefix);
  if (digest === undefined) {
    digest = createHash('sha256').update(prefix).digest().subarray(0, DIGEST_BYTES).toString('latin1');
    // A service sees few distinct prefixes; a client inventing them must not grow this without bound.
    if (digests.size >= 10_000) digests.clear();
    digests.set(prefix, digest);
  }
  return digest;
}
