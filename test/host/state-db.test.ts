import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateDb } from '@sluice/host/state';
import { describe, expect, it } from 'vitest';

const NOW = 1_800_000_000_000;
const OK = 'ok';

const tempDir = () => mkdtemp(join(tmpdir(), 'sluice-state-db-'));

/** A StateDb as sluice-server opens one (no key bound). */
function stateDb(
  dir: string,
  durability: 'commit' | 'flush',
  cacheKeys: number,
  log: (event: string) => void,
) {
  return new StateDb(dir, {
    owner: { option: 'dataDir', name: 'test' },
    durability,
    cacheKeys,
    clock: () => NOW,
    replayGrace: 0,
    log,
  });
}

/** A StateDb on a fresh directory, with what it logged. */
async function open(durability: 'commit' | 'flush' = 'commit') {
  const dir = await tempDir();
  const events: string[] = [];
  const db = stateDb(dir, durability, 100, (event) => events.push(event));
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
        const good = db.enqueue(['good'], (tx) => {
          tx.write('good', 1, 60_000, NOW);
          return OK;
        });
        // A value LMDB refuses (a key past its 1,978 bytes), written after the first job's write.
        const bad = db.enqueue(['x'.repeat(3000)], (tx) => {
          tx.write('x'.repeat(3000), 1, 60_000, NOW);
          return OK;
        });
        const bug = db.enqueue([], () => {
          throw new Error('a bug in one command');
        });
        const after = db.enqueue(['after', 'good'], (tx) => {
          tx.write('after', 2, 60_000, NOW);
          return Number(tx.read('good', NOW));
        });
        await Promise.all([good.done, bad.done, bug.done, after.done]);
        expect([good.result, good.error]).toEqual([OK, undefined]);
        expect([bad.result, bad.error?.message]).toEqual([undefined, expect.stringMatching(/key size/i)]);
        expect([bug.result, bug.error?.message]).toEqual([undefined, 'a bug in one command']);
        expect([after.result, after.error]).toEqual([1, undefined]);
        expect(events).toContain('transaction-failed');
        const read = db.enqueue(
          ['good', 'after'],
          (tx) => Number(tx.read('good', NOW)) + Number(tx.read('after', NOW)),
        );
        await read.done;
        expect(read.result).toBe(3);
      } finally {
        await close();
      }
    });
  }

  it('a cache smaller than a turn: the turn reads its own writes, and an aborted turn leaves the committed values', async () => {
    const dir = await tempDir();
    const db = stateDb(dir, 'commit', 2, () => {});
    const keys = ['a', 'b', 'c', 'd', 'e'];
    try {
      const old = db.enqueue(keys, (tx) => {
        for (const k of keys) tx.write(k, 'old', 60_000, NOW);
        return OK;
      });
      await old.done;
      const aborted = db.enqueue(keys, (tx) => {
        for (const k of keys) tx.write(k, 'new', 60_000, NOW);
        const seen = keys.map((k) => tx.read(k, NOW));
        if (seen.some((v) => v !== 'new')) return `saw ${seen.join(',')}`;
        throw new Error('abort after reading');
      });
      await aborted.done;
      expect(aborted.error?.message).toBe('abort after reading');
      const read = db.enqueue(keys, (tx) => keys.map((k) => tx.read(k, NOW)).join(','));
      await read.done;
      expect(read.result).toBe('old,old,old,old,old');
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a failed turn leaves the cache as LMDB is: a read after it sees the committed value, not the aborted one', async () => {
    const { db, close } = await open();
    try {
      const first = db.enqueue(['k'], (tx) => {
        tx.write('k', 'committed', 60_000, NOW);
        return OK;
      });
      await first.done;
      const aborted = db.enqueue(['k'], (tx) => {
        tx.write('k', 'aborted', 60_000, NOW);
        throw new Error('after writing');
      });
      await aborted.done;
      const read = db.enqueue(['k'], (tx) => String(tx.read('k', NOW)));
      await read.done;
      expect(read.result).toBe('committed');
    } finally {
      await close();
    }
  });
});

describe('StateDb.pause: no transaction while another process opens the environment', () => {
  it('jobs queued while paused wait, commit on resume in order, and the sweep skips its step', async () => {
    const { db, close } = await open('commit');
    try {
      db.pause();
      const first = db.enqueue(['k'], (tx) => {
        tx.write('k', 1, 60_000, NOW);
        return 'first';
      });
      // Several turns pass: nothing runs.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(first.result).toBeUndefined();
      expect(db.sweep(100, NOW + 120_000)).toEqual({ visited: 0, removed: 0 });
      const second = db.enqueue(['k'], (tx) => tx.read('k', NOW));
      db.resume();
      await Promise.all([first.done, second.done]);
      expect([first.result, second.result]).toEqual(['first', 1]);
      // Resumed, the sweep steps again: the key has expired by then.
      expect(db.sweep(100, NOW + 120_000).removed).toBe(1);
    } finally {
      await close();
    }
  });

  it('close while paused commits what waited', async () => {
    const dir = await tempDir();
    try {
      const db = stateDb(dir, 'commit', 100, () => {});
      db.pause();
      const job = db.enqueue(['k'], (tx) => {
        tx.write('k', 7, 60_000, NOW);
        return OK;
      });
      await db.close();
      await job.done;
      expect(job.result).toBe(OK);
      const again = stateDb(dir, 'commit', 100, () => {});
      const read = again.enqueue(['k'], (tx) => tx.read('k', NOW));
      await read.done;
      expect(read.result).toBe(7);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
