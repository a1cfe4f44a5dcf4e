import { fixedWindow, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';
import { T0 } from './helpers.js';

describeStoreBehaviour('MemoryStore', () => new MemoryStore());
describeStoreBehaviour('MemoryStore (fixed base time)', () => new MemoryStore(), { baseTime: T0 });

describe('MemoryStore bounds', () => {
  it('a flood of unique keys never holds more than maxKeys', () => {
    const store = new MemoryStore({ maxKeys: 100 });
    const limiter = new Limiter({ store, algorithm: tokenBucket({ capacity: 5, refillInterval: '1h' }) });
    for (let i = 0; i < 10_000; i++) {
      limiter.checkSync(`flood:${i}`, { now: T0 + i });
      expect(store.keyCount).toBeLessThanOrEqual(100);
    }
    expect(store.keyCount).toBe(100);
    // The newest keys are the ones kept.
    expect(store.inspect(limiter.limits[0]!.algorithm, 'flood:9999')).toBeDefined();
    expect(store.inspect(limiter.limits[0]!.algorithm, 'flood:0')).toBeUndefined();
  });

  it('maxKeys holds across several limits and layered writes', () => {
    const store = new MemoryStore({ maxKeys: 50 });
    const limiter = new Limiter({
      store,
      limits: [
        { name: 'a', algorithm: fixedWindow({ limit: 5, window: '1h' }) },
        { name: 'b', algorithm: tokenBucket({ capacity: 5, refillInterval: '1h' }) },
      ],
    });
    for (let i = 0; i < 2000; i++) {
      limiter.checkSync([`ip:${i % 700}`, `user:${i}`], { now: T0 + i });
      expect(store.keyCount).toBeLessThanOrEqual(50);
    }
  });

  it('evicts an expired entry before a live one, even when the live one is older', () => {
    const store = new MemoryStore({ maxKeys: 3 });
    const algorithm = tokenBucket({ capacity: 10, refillInterval: 10_000 }); // 1000 ms per token
    const limiter = new Limiter({ store, algorithm });
    limiter.checkSync('old-live', { now: T0, cost: 10 }); // full again at +10000
    limiter.checkSync('expires-soon', { now: T0 + 1, cost: 1 }); // full again at +1001
    limiter.checkSync('live', { now: T0 + 2, cost: 10 });
    limiter.checkSync('new', { now: T0 + 5000 });
    expect(store.keyCount).toBe(3);
    expect(store.inspect(algorithm, 'expires-soon')).toBeUndefined();
    for (const key of ['old-live', 'live', 'new']) expect(store.inspect(algorithm, key), key).toBeDefined();
  });

  it('otherwise evicts the least recently written key', () => {
    const store = new MemoryStore({ maxKeys: 3 });
    const algorithm = fixedWindow({ limit: 10, window: '1h' });
    const limiter = new Limiter({ store, algorithm });
    for (const key of ['a', 'b', 'c']) limiter.checkSync(key, { now: T0 });
    limiter.checkSync('a', { now: T0 + 1 }); // a is now the most recently written
    limiter.checkSync('d', { now: T0 + 2 });
    expect(store.inspect(algorithm, 'b')).toBeUndefined();
    for (const key of ['a', 'c', 'd']) expect(store.inspect(algorithm, key), key).toBeDefined();
    limiter.checkSync('c', { now: T0 + 3 });
    limiter.checkSync('e', { now: T0 + 4 });
    expect(store.inspect(algorithm, 'a')).toBeUndefined();
    for (const key of ['c', 'd', 'e']) expect(store.inspect(algorithm, key), key).toBeDefined();
  });

  it('a refused key is kept like a written one: a flood cannot make the store forget a client it is refusing', () => {
    // Regression: refusals did not count as use, so a client being refused aged out under a
    // flood of new keys and came back with a fresh limit (found by test/reliability).
    const store = new MemoryStore({ maxKeys: 2 });
    const algorithm = fixedWindow({ limit: 1, window: '1h' });
    const limiter = new Limiter({ store, algorithm });
    limiter.checkSync('a', { now: T0 });
    limiter.checkSync('b', { now: T0 });
    limiter.checkSync('c', { now: T0 + 1 }); // evicts a, the oldest
    expect(store.inspect(algorithm, 'a')).toBeUndefined();
    expect(limiter.checkSync('b', { now: T0 + 2 })).toMatchObject({ allowed: false }); // b in use, refused
    limiter.checkSync('d', { now: T0 + 3 });
    expect(store.inspect(algorithm, 'b')).toBeDefined();
    expect(store.inspect(algorithm, 'c')).toBeUndefined();
    expect(limiter.checkSync('b', { now: T0 + 4 })).toMatchObject({ allowed: false });
  });

  it('a peek is not a use: it does not save a key from eviction', () => {
    const store = new MemoryStore({ maxKeys: 2 });
    const algorithm = fixedWindow({ limit: 1, window: '1h' });
    const limiter = new Limiter({ store, algorithm });
    limiter.checkSync('a', { now: T0 });
    limiter.checkSync('b', { now: T0 });
    limiter.checkSync('c', { now: T0 + 1 }); // evicts a
    limiter.peekSync('b', { now: T0 + 2 });
    limiter.checkSync('d', { now: T0 + 3 });
    expect(store.inspect(algorithm, 'b')).toBeUndefined();
    expect(store.inspect(algorithm, 'c')).toBeDefined();
  });

  it('reclaims expired state as new keys arrive, with no timer', () => {
    const store = new MemoryStore();
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 1, window: 1000 }) });
    for (let i = 0; i < 100; i++) limiter.checkSync(`early:${i}`, { now: T0 });
    expect(store.keyCount).toBe(100);
    for (let i = 0; i < 100; i++) limiter.checkSync(`late:${i}`, { now: T0 + 5000 });
    expect(store.keyCount).toBe(100);
  });

  it('regression: returning clients under their limit keep their state between visits (each visit was an insert)', () => {
    // A bucket full again between two visits was reclaimed by the next new key, so each client
    // came back to no state and was re-inserted, reclaiming the next client due back: every
    // decision took the insert path (issue 16).
    const store = new MemoryStore();
    const algorithm = tokenBucket({ capacity: 20, refillInterval: '10s' }); // full again 500 ms after a visit
    const limiter = new Limiter({ store, algorithm });
    const clients = 1000;
    let now = T0;
    let missing = 0;
    for (let pass = 0; pass < 5; pass++) {
      for (let i = 0; i < clients; i++) {
        if (pass > 0 && store.inspect(algorithm, `client:${i}`) === undefined) missing++;
        expect(limiter.checkSync(`client:${i}`, { now })).toMatchObject({ allowed: true, remaining: 19 });
        now += 1000 / clients; // each client comes back every second
      }
    }
    expect(missing).toBe(0);
    expect(store.keyCount).toBe(clients);
  });

  it('reclaims a stale entry once it has been stale for a window of its limit, not before', () => {
    const store = new MemoryStore();
    const algorithm = tokenBucket({ capacity: 10, refillInterval: '10s' }); // window 10 s
    const limiter = new Limiter({ store, algorithm });
    limiter.checkSync('idle', { now: T0 }); // full again at T0 + 1000
    limiter.checkSync('new:1', { now: T0 + 10_999 });
    expect(store.inspect(algorithm, 'idle')).toBeDefined();
    limiter.checkSync('new:2', { now: T0 + 11_000 });
    expect(store.inspect(algorithm, 'idle')).toBeUndefined();
    expect(store.keyCount).toBe(2);
  });

  it('uses its clock when a call gives no now', () => {
    let now = T0;
    const store = new MemoryStore({ clock: () => now });
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 1, window: 1000 }) });
    expect(limiter.checkSync('k')).toMatchObject({ allowed: true, resetAfter: 1000 });
    now += 400;
    expect(limiter.checkSync('k')).toMatchObject({ allowed: false, retryAfter: 600 });
    now += 600;
    expect(limiter.checkSync('k')).toMatchObject({ allowed: true });
  });

  it('shutdown forgets everything', () => {
    const store = new MemoryStore();
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 1, window: 1000 }) });
    limiter.checkSync('k', { now: T0 });
    store.shutdown();
    store.shutdown();
    expect(store.keyCount).toBe(0);
    expect(limiter.checkSync('k', { now: T0 })).toMatchObject({ allowed: true });
  });
});
