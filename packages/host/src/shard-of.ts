/**
 * Which shard a stored key belongs to (state-shards.ts): pure, and imported by StateTxn, which
 * refuses a key of another shard.
 */

/** The most shards a directory may be split over. */
export const MAX_SHARDS = 64;

/** Where an environment sits among the shards. */
export interface ShardPlace {
  readonly index: number;
  readonly count: number;
}

/** The place of an unsharded environment: every key is its own. */
export const ONLY_SHARD: ShardPlace = { index: 0, count: 1 };

/** Characters of a stored key before the client key: the digest of its prefix (stored-key.ts). */
const PREFIX_CHARS = 8;

/**
 * The shard of a stored key (latin1, one char per byte) among `count`: 32-bit FNV-1a of the
 * client key's bytes, modulo the count. Part of the stored layout: never change it.
 */
export function shardOf(id: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = PREFIX_CHARS; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

/** A key read or written in a shard that is not its own: a bug in the caller's declared keys. */
export function misplaced(id: string, count: number, where: string): never {
  throw new Error(
    `key ${JSON.stringify(id.slice(PREFIX_CHARS, PREFIX_CHARS + 40))} belongs to shard ${shardOf(id, count)} of ${count}, outside ${where}: a job must declare every key it touches`,
  );
}
