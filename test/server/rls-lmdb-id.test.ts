import { fixedWindow } from '@sluice/core';
import { storedId } from '@sluice/host/state';
import { describe, expect, it } from 'vitest';
import { specOf } from '../../packages/server/src/algorithm-spec.js';
import { lmdbId } from '../../packages/server/src/rls/backends.js';

// The LMDB backend's counter ids, computed per call without a Buffer for ASCII keys, are the ids
// storedId gives the key's UTF-8 bytes: counters written before the shortcut are found after it.

describe('lmdbId', () => {
  const algorithm = fixedWindow({ limit: 10, window: 60_000 });
  const reference = (key: string) => storedId(`rls:${specOf(algorithm)}`, Buffer.from(key));

  it.each([
    ['an ASCII key with the NULs between entries', 'app\0user\0alice'],
    ['an empty key', ''],
    ['a key past ASCII', 'app\0user\0Zoë 🚀'],
    ['a lone surrogate', 'app\0user\0\ud800'],
  ])('%s: the id storedId gives its UTF-8 bytes', (_, key) => {
    const call = { algorithm, key, cost: 1, policy: 'p' };
    expect(lmdbId(call)).toBe(reference(key));
    expect(lmdbId(call)).toBe(reference(key)); // the second time, from the cached digest
  });

  it('two algorithms keep two digests', () => {
    const other = fixedWindow({ limit: 11, window: 60_000 });
    const a = lmdbId({ algorithm, key: 'k', cost: 1, policy: 'p' });
    const b = lmdbId({ algorithm: other, key: 'k', cost: 1, policy: 'p' });
    expect(a).not.toBe(b);
    expect(b).toBe(storedId(`rls:${specOf(other)}`, Buffer.from('k')));
  });
});
