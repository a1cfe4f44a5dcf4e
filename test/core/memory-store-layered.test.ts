import { MemoryStore, tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';

const T0 = 1_800_000_000_000;

describe('MemoryStore: layered limits in one key space', () => {
  it("regression: a layered check whose new key reclaims a stale key of the same batch kept that key's consumption (found by HostStore's differential test)", () => {
    // Two layered limits on one algorithm (one key space): 'a' stored and gone stale (full again),
    // '{c}' new. Inserting '{c}' rotates the generations and reclaims the stale 'a': the batch then
    // wrote 'a''s new state into a cell that was no longer stored, and the unit it took was lost.
    const bucket = tokenBucket({ capacity: 5, refillInterval: 2000 });
    const store = new MemoryStore();
    const call = (key: string, policy: string) => ({ algorithm: bucket, key, cost: 1, policy });
    expect(store.consume([call('a', 'p')], T0)[0]!.remaining).toBe(4);
    const later = T0 + 2400;
    expect(store.consume([call('{c}', 'l0'), call('a', 'l1')], later).map((d) => d.remaining)).toEqual([
      4, 4,
    ]);
    expect(store.peek([call('a', 'p')], later)[0]!.remaining).toBe(4);
    expect(store.keyCount).toBe(2);
  });
});
