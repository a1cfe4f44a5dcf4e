import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import * as resp from '../../packages/server/src/resp.js';
import { StateDb } from '../../packages/server/src/state-db.js';
import { tempDir } from './harness.js';

const NOW = 1_800_000_000_000;

/** A StateDb on a fresh directory, with what it logged. */
async function open(durability: 'commit' | 'flush' = 'commit') {
  const dir = await tempDir();
  const events: string[] = [];
  const db = new StateDb(dir, durability, 100, (event) => events.push(event));
  return {
    db,
    events,
    async close() {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe('StateDb: one failing job does not fail its turn (issue 23, 1.1)', () => {
  for (const durability of ['commit', 'flush'] as const) {
    it(`the jobs beside one that throws inside the transaction commit and answer (durability ${durability})`, async () => {
      const { db, events, close } = await open(durability);
      try {
        const good = db.enqueue((tx) => {
          tx.write('good', 1, 60_000, NOW);
          return resp.OK;
        });
        // A value LMDB refuses (a key past its 1,978 bytes), written after the first job's write.
        const bad = db.enqueue((tx) => {
          tx.write('x'.repeat(3000), 1, 60_000, NOW);
          return resp.OK;
        });
        const bug = db.enqueue(() => {
          throw new Error('a bug in one command');
        });
        const after = db.enqueue((tx) => {
          tx.write('after', 2, 60_000, NOW);
          return resp.integer(Number(tx.read('good', NOW)));
        });
        await Promise.all([good.done, bad.done, bug.done, after.done]);
        expect(good.reply).toBe(resp.OK);
        expect(bad.reply).toMatch(/^-ERR persistence failed: .*key size/i);
        expect(bug.reply).toBe('-ERR persistence failed: a bug in one command\r\n');
        expect(after.reply).toBe(':1\r\n');
        expect(events).toContain('transaction-failed');
        const read = db.enqueue((tx) =>
          resp.integer(Number(tx.read('good', NOW)) + Number(tx.read('after', NOW))),
        );
        await read.done;
        expect(read.reply).toBe(':3\r\n');
      } finally {
        await close();
      }
    });
  }

  it('a cache smaller than a turn: the turn reads its own writes, and an aborted turn leaves the committed values', async () => {
    const dir = await tempDir();
    const db = new StateDb(dir, 'commit', 2, () => {});
    const keys = ['a', 'b', 'c', 'd', 'e'];
    try {
      const old = db.enqueue((tx) => {
        for (const k of keys) tx.write(k, 'old', 60_000, NOW);
        return resp.OK;
      });
      await old.done;
      const aborted = db.enqueue((tx) => {
        for (const k of keys) tx.write(k, 'new', 60_000, NOW);
        const seen = keys.map((k) => tx.read(k, NOW));
        if (seen.some((v) => v !== 'new')) return resp.error(`saw ${seen.join(',')}`);
        throw new Error('abort after reading');
      });
      await aborted.done;
      expect(aborted.reply).toBe('-ERR persistence failed: abort after reading\r\n');
      const read = db.enqueue((tx) => resp.bulk(keys.map((k) => tx.read(k, NOW)).join(',')));
      await read.done;
      expect(read.reply).toBe(resp.bulk('old,old,old,old,old'));
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a failed turn leaves the cache as LMDB is: a read after it sees the committed value, not the aborted one', async () => {
    const { db, close } = await open();
    try {
      const first = db.enqueue((tx) => {
        tx.write('k', 'committed', 60_000, NOW);
        return resp.OK;
      });
      await first.done;
      const aborted = db.enqueue((tx) => {
        tx.write('k', 'aborted', 60_000, NOW);
        throw new Error('after writing');
      });
      await aborted.done;
      const read = db.enqueue((tx) => resp.bulk(String(tx.read('k', NOW))));
      await read.done;
      expect(read.reply).toBe('$9\r\ncommitted\r\n');
    } finally {
      await close();
    }
  });
});
