import { fixedWindow, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { T0 } from './helpers.js';

// The two-generation key space must keep its books exactly, whatever the order of writes,
// rewrites, refusals and expiry: these invariants are what bounds memory.
describe('MemoryStore generations', () => {
  it('keyCount equals the keys present, never exceeds maxKeys, and never drops the key just written', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(
          fc.record({ key: fc.integer({ min: 0, max: 30 }), limit: fc.boolean(), advance: fc.nat(3000) }),
          {
            minLength: 1,
            maxLength: 300,
          },
        ),
        (maxKeys, steps) => {
          const store = new MemoryStore({ maxKeys });
          const short = fixedWindow({ limit: 2, window: 1000 });
          const long = tokenBucket({ capacity: 3, refillInterval: 60_000 });
          const limiters = [short, long].map((algorithm) => new Limiter({ store, algorithm }));
          const written = new Set<string>();
          let now = T0;
          for (const step of steps) {
            now += step.advance;
            const key = `k${step.key}`;
            const algorithm = step.limit ? long : short;
            const decision = limiters[step.limit ? 1 : 0]!.checkSync(key, { now });
            written.add(`${step.limit}:${key}`);
            expect(store.keyCount).toBeLessThanOrEqual(maxKeys);
            if ((decision as { allowed: boolean }).allowed)
              expect(store.inspect(algorithm, key)).toBeDefined();
            let present = 0;
            for (const entry of written) {
              const [which, name] = entry.split(':') as [string, string];
              if (store.inspect(which === 'true' ? long : short, name) !== undefined) present++;
            }
            expect(store.keyCount).toBe(present);
          }
        },
      ),
      { numRuns: 300, seed: 20261122 },
    );
  });

  it('a hot key keeps its state while a flood of unique keys passes through', () => {
    const store = new MemoryStore({ maxKeys: 1000 });
    const algorithm = fixedWindow({ limit: 1_000_000, window: '1h' });
    const limiter = new Limiter({ store, algorithm });
    for (let i = 0; i < 50_000; i++) {
      limiter.checkSync('hot', { now: T0 });
      limiter.checkSync(`flood:${i}`, { now: T0 });
    }
    expect(store.inspect(algorithm, 'hot')).toEqual([50_000, Math.floor(T0 / 3_600_000) * 3_600_000]);
    expect(store.keyCount).toBe(1000);
  });
});
