/**
 * Bounded size and expiry, on a clock moved by hand: keys as good as new are swept; past
 * `maxKeys` the keys that expire soonest go first (a busy key whose expiry keeps moving later is
 * kept), and the data file stays as large as the keys kept need.
 */
import { join } from 'node:path';
import { fixedWindow, Limiter, slidingWindowLog, tokenBucket } from '@sluice/core';
import { HostStore } from '@sluice/host';
import { describe, expect, it } from 'vitest';
import { diskBytes } from '../setup/disk-bytes.js';
import { hostStore, tempPath } from './helpers.js';

const T0 = 1_800_000_000_000;

describe('HostStore expiry', () => {
  it('the sweep removes the keys as good as new at the store clock, and only those', async () => {
    let now = T0;
    const store = hostStore({ clock: () => now, sweepInterval: 0, sweepBatch: 50 });
    try {
      // A token takes 200 ms to come back: each key is as good as new 200 ms after its take.
      const short = new Limiter({ algorithm: tokenBucket({ capacity: 5, refillInterval: 1000 }), store });
      const long = new Limiter({ algorithm: fixedWindow({ limit: 5, window: '1d' }), store });
      await Promise.all(Array.from({ length: 120 }, (_, i) => short.check(`short:${i}`)));
      await Promise.all(Array.from({ length: 10 }, (_, i) => long.check(`long:${i}`)));
      expect(store.keyCount).toBe(130);
      expect(store.sweep()).toBe(0);
      // Expiry is indexed by the second: 2 s later every short key is due.
      now = T0 + 2000;
      expect(store.sweep()).toBe(50);
      expect(store.sweep()).toBe(50);
      expect(store.sweep()).toBe(20);
      expect(store.sweep()).toBe(0);
      expect(store.keyCount).toBe(10);
      expect(await long.peek('long:3')).toMatchObject({ remaining: 4 });
      // A swept key answers as a fresh one.
      expect(await short.check('short:7')).toMatchObject({ allowed: true, remaining: 4 });
    } finally {
      await store.shutdown();
    }
  });
});

describe('HostStore maxKeys', () => {
  it('past maxKeys the keys that expire soonest go first; a busy key pushed later stays', async () => {
    let now = T0;
    const store = hostStore({ clock: () => now, sweepInterval: 0, maxKeys: 50 });
    try {
      // A log's state is as good as new one window after its newest entry: each write pushes it later.
      const limiter = new Limiter({ algorithm: slidingWindowLog({ limit: 1000, window: '10m' }), store });
      await limiter.check('busy');
      for (let i = 1; i <= 200; i++) {
        now = T0 + i * 1000;
        await limiter.check(`k${i}`);
        await limiter.check('busy');
        expect(store.keyCount).toBeLessThanOrEqual(50);
      }
      expect(store.keyCount).toBe(50);
      // The busy key kept every take; the newest keys are there, the oldest gone (fresh again).
      expect(await limiter.peek('busy')).toMatchObject({ remaining: 1000 - 201 });
      expect(await limiter.peek('k200')).toMatchObject({ remaining: 999 });
      expect(await limiter.peek('k152')).toMatchObject({ remaining: 999 });
      expect(await limiter.peek('k150')).toMatchObject({ remaining: 1000 });
      expect(await limiter.peek('k1')).toMatchObject({ remaining: 1000 });
    } finally {
      await store.shutdown();
    }
  });
});

describe('HostStore data file', () => {
  it('a flood of unique keys past maxKeys leaves the file as large as the keys kept need', async () => {
    let now = T0;
    const path = tempPath('flood');
    const store = new HostStore({ path, clock: () => now, sweepInterval: 0, maxKeys: 1000, logger: false });
    try {
      const limiter = new Limiter({ algorithm: tokenBucket({ capacity: 10, refillInterval: '1m' }), store });
      for (let round = 0; round < 40; round++) {
        now += 1000;
        await Promise.all(Array.from({ length: 500 }, (_, i) => limiter.check(`flood:${round}:${i}`)));
      }
      expect(store.keyCount).toBe(1000);
      // 20,000 keys went through; 1,000 of about 100 bytes each (state, index, LMDB) are kept.
      expect(diskBytes(join(path, 'data.mdb'))).toBeLessThan(2 * 2 ** 20);
    } finally {
      await store.shutdown();
    }
  });
});
