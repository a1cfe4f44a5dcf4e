import type { Algorithm } from '@sluice/core';

const SPECIAL = /[\\{}]/;
const SPECIAL_ALL = /[\\{}]/g;
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '{': '\\(', '}': '\\)' };

/**
 * Makes a user key safe inside a hash tag: `\` → `\\`, `{` → `\(`, `}` → `\)`. The result holds no
 * `}` (so the tag cannot end early and move the slot) and the mapping is injective (every `\` starts
 * a two-character escape), so two user keys never share a Redis key.
 */
export function escapeKey(key: string): string {
  return SPECIAL.test(key) ? key.replace(SPECIAL_ALL, (c) => ESCAPES[c]!) : key;
}

/**
 * The Redis key of one limit's state: `<prefix><fingerprint>:{<escaped user key>}`. Only the user
 * key is in the hash tag, so every limit of one user key lands in one slot (one script on a
 * Cluster); the fingerprint keeps differently configured limits apart.
 */
export function stateKey(prefix: string, algorithm: Algorithm, key: string): string {
  return `${prefix}${algorithm.fingerprint}:{${escapeKey(key)}}`;
}
