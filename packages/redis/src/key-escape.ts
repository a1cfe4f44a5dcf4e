// Backslash, braces, and lone UTF-16 surrogates (which UTF-8 encoding would turn into U+FFFD,
// so that distinct keys would collide on the wire).
const SPECIAL = /[\\{}]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const SPECIAL_ALL = new RegExp(SPECIAL.source, 'g');

function escapeOne(c: string): string {
  if (c === '\\') return '\\\\';
  if (c === '{') return '\\(';
  if (c === '}') return '\\)';
  return `\\u${c.charCodeAt(0).toString(16)}`;
}

/**
 * Makes a user key safe inside a hash tag: `\` → `\\`, `{` → `\(`, `}` → `\)`, a lone surrogate →
 * `\u` + its 4 hex digits. The result holds no `}` (so the tag cannot end early and move the slot)
 * and encodes to UTF-8 without loss, and the mapping is injective (every `\` starts an escape), so
 * two user keys never share a Redis key.
 */
export function escapeKey(key: string): string {
  return SPECIAL.test(key) ? key.replace(SPECIAL_ALL, escapeOne) : key;
}

/**
 * The two Redis keys of one lease set: the sorted set `<prefix>lease:<space>:{<key>}` and the
 * ttl beside it (`…:ttl`), in one hash slot. Both parts escaped: the space holds no brace, so
 * the first `{` always opens the hash tag, and no lease key can equal a limit key (a fingerprint
 * has no `:`).
 */
export function leaseKeys(prefix: string, space: string, key: string): [set: string, ttl: string] {
  const set = `${prefix}lease:${escapeKey(space)}:{${escapeKey(key)}}`;
  return [set, `${set}:ttl`];
}
