import { rm } from 'node:fs/promises';
import { SluiceServer } from '@sluice/server';
import { describe, expect, it } from 'vitest';
import { expectNoAcknowledgedLoss } from './crash-load.js';
import { startServer, tempDir } from './harness.js';

// A refill time no test reaches: every bucket only goes down, so its level counts the writes.
const NEVER = '2000000000';

describe('sluice-server persistence (LMDB)', () => {
  it('a clean restart on the same directory keeps every bucket', async () => {
    const first = await startServer();
    const client = await first.client();
    for (let i = 0; i < 5; i++) await client.call('RL.PREDUCE', 'kept', '10', NEVER, 'AT', '0');
    await client.call('RL.REDUCE', 'other', '3', '3600', 'TAKE', '2');
    await first.stop(true);

    const second = await startServer({}, first.dir);
    try {
      const again = await second.client();
      expect(await again.call('RL.PGET', 'kept', '10', NEVER, 'AT', '0')).toBe(5);
      expect(await again.call('RL.GET', 'other', '3', '3600')).toBe(1);
    } finally {
      await second.stop();
    }
  });

  it('the in-memory cache in front of LMDB: keys pushed out of it, or never cached, read back as stored', async () => {
    for (const cacheKeys of [0, 2]) {
      const t = await startServer({ cacheKeys });
      try {
        const client = await t.client();
        // Five keys through a cache of two (or none): each key is read back from LMDB at least once.
        for (let round = 0; round < 3; round++) {
          for (let k = 0; k < 5; k++) {
            expect(
              await client.call('RL.PREDUCE', `c${k}`, '10', NEVER, 'AT', '0'),
              `cacheKeys ${cacheKeys}`,
            ).toBe(10 - round);
          }
        }
        expect(await client.call('RL.PGET', 'c4', '10', NEVER, 'AT', '0')).toBe(7);
      } finally {
        await t.stop();
      }
    }
  });

  it('refuses a cacheKeys that is not a whole number ≥ 0, at creation', async () => {
    const dataDir = await tempDir();
    for (const cacheKeys of [-1, 1.5, Number.NaN]) {
      expect(() => new SluiceServer({ dataDir, cacheKeys })).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_OPTION',
          message: expect.stringMatching(/^cacheKeys must be an integer ≥ 0/),
        }),
      );
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  for (const durability of ['commit', 'flush'] as const) {
    it(`SIGKILL under load loses no acknowledged decision (durability ${durability})`, async () => {
      await expectNoAcknowledgedLoss({
        args: ['--durability', durability],
        crash: (server) => server.kill('SIGKILL'),
        keepGoing: 0,
        restart: true,
      });
    });
  }

  it('the sweep removes buckets as good as new, a bounded batch per step, and keeps the rest', async () => {
    const t = await startServer({ sweepInterval: 3_600_000, sweepBatch: 500 });
    try {
      const client = await t.client();
      const flood = client.pipeline();
      // 2,000 unique keys refilled within a second, 10 that take a day.
      for (let i = 0; i < 2000; i++) flood.call('RL.PREDUCE', `flood:${i}`, '2', '1000');
      for (let i = 0; i < 10; i++) flood.call('RL.PREDUCE', `day:${i}`, '2', '86400000');
      await flood.exec();
      const stored = async () => {
        await t.server.flushed();
        const info = (await client.info()) as string;
        return Number(/keys_stored:(\d+)/.exec(info)?.[1]);
      };
      expect(await stored()).toBe(2010);
      // Not yet as good as new: nothing goes.
      expect(t.server.sweepStep(Date.now())).toBe(0);
      const later = Date.now() + 60_000;
      const steps: number[] = [];
      for (let i = 0; i < 6; i++) steps.push(t.server.sweepStep(later));
      expect(Math.max(...steps)).toBeLessThanOrEqual(500);
      expect(steps.reduce((a, b) => a + b, 0)).toBe(2000);
      expect(await stored()).toBe(10);
      expect(await client.call('RL.PGET', 'day:0', '2', '86400000')).toBe(1);
    } finally {
      await t.stop();
    }
  });
});
