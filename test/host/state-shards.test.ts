import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Queued, StateDb, shardOf, storedIdOfText } from '@sluice/host/state';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * Issue 36: the state split over several LMDB environments (`shards`), so that several processes
 * decide in parallel on different shards. What must hold whatever the count: every key is found
 * where it was written, a job over keys of several shards is all-or-nothing and keeps its order
 * among the turn's jobs, the count is fixed when the directory is made, and the bounds (sweep,
 * key count) cover every shard.
 */

const NOW = 1_800_000_000_000;
const dirs: string[] = [];
const dbs: StateDb[] = [];

afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-shards-'));
  dirs.push(dir);
  return dir;
}

function open(dir: string, shards?: number, extra: { maxKeys?: number; clock?: () => number } = {}) {
  const db = new StateDb(dir, {
    owner: { option: 'dataDir', name: 'test' },
    durability: 'commit',
    cacheKeys: 100,
    clock: extra.clock ?? (() => NOW),
    replayGrace: 0,
    shards,
    maxKeys: extra.maxKeys,
    log: () => {},
  });
  dbs.push(db);
  return db;
}

/** A stored key as the server makes them (an 8-byte prefix digest, then the client key). */
const id = (key: string, prefix = 'test') => storedIdOfText(prefix, key);

/** Client keys, the first `n` whose shards among `count` are all different. */
function keysInDistinctShards(count: number, n: number): string[] {
  const found = new Map<number, string>();
  for (let i = 0; found.size < n; i++) {
    const key = `k${i}`;
    const shard = shardOf(id(key), count);
    if (!found.has(shard)) found.set(shard, key);
  }
  return [...found.values()];
}

async function settled<T>(queued: Queued<T>): Promise<T> {
  await queued.done;
  if (queued.error !== undefined) throw queued.error;
  return queued.result as T;
}

describe('shardOf: part of the stored layout', () => {
  it("is pinned: 32-bit FNV-1a of the client key's bytes, modulo the count (values from a separate implementation)", () => {
    const keys = ['', 'a', 'user:1', 'ip:203.0.113.7', 'k'.repeat(100)];
    expect(keys.map((key) => shardOf(id(key), 16))).toEqual([5, 12, 11, 9, 9]);
    expect(keys.map((key) => shardOf(id(key), 64))).toEqual([5, 44, 11, 41, 25]);
  });

  it('depends on the client key only: every limit, block and lease of a key shares its shard', () => {
    for (const key of ['a', 'user:42', 'ip:198.51.100.9']) {
      const shards = ['token-bucket:…', 'gcra:…', 'host-block:…', 'host-lease:api'].map((prefix) =>
        shardOf(id(key, prefix), 16),
      );
      expect(new Set(shards).size).toBe(1);
    }
  });

  it('spreads 10,000 keys over 16 shards within 20% of even', () => {
    const counts = new Array(16).fill(0);
    for (let i = 0; i < 10_000; i++) counts[shardOf(id(`user:${i}`), 16)]++;
    for (const c of counts) expect(Math.abs(c - 625)).toBeLessThan(125);
  });
});

describe('StateDb over shards', () => {
  it('writes each key into its own shard and reads it back there, in this process and after a reopen', async () => {
    const dir = await tempDir();
    const db = open(dir, 4);
    expect(db.shardCount).toBe(4);
    const keys = Array.from({ length: 40 }, (_, i) => id(`key-${i}`));
    await settled(
      db.enqueue(keys, (tx) => {
        keys.forEach((k, i) => {
          tx.write(k, i, 60_000, NOW);
        });
      }),
    );
    expect(db.count()).toBe(40);
    for (let s = 1; s < 4; s++) expect(existsSync(join(dir, `shard-${s}`, 'data.mdb'))).toBe(true);
    await db.close();
    const again = open(dir);
    expect(again.shardCount).toBe(4);
    const read = await settled(again.enqueue(keys, (tx) => keys.map((k) => tx.read(k, NOW))));
    expect(read).toEqual(keys.map((_, i) => i));
    const snapshot = again.snapshot();
    expect(keys.map((k) => snapshot.read(k, NOW))).toEqual(keys.map((_, i) => i));
  });

  it('a job over keys of several shards is all-or-nothing: one that throws leaves every shard as it was', async () => {
    const dir = await tempDir();
    const db = open(dir, 8);
    const keys = keysInDistinctShards(8, 3).map((k) => id(k));
    await settled(
      db.enqueue(keys, (tx) => {
        for (const k of keys) tx.write(k, 'old', 60_000, NOW);
      }),
    );
    const failed = db.enqueue(keys, (tx) => {
      for (const k of keys) tx.write(k, 'new', 60_000, NOW);
      throw new Error('after writing every shard');
    });
    await failed.done;
    expect(failed.error?.message).toBe('after writing every shard');
    expect(await settled(db.enqueue(keys, (tx) => keys.map((k) => tx.read(k, NOW))))).toEqual([
      'old',
      'old',
      'old',
    ]);
  });

  it("a turn's jobs on a key run in the order queued, across single- and several-shard jobs", async () => {
    const db = open(await tempDir(), 8);
    const [a, b, c] = keysInDistinctShards(8, 3).map((k) => id(k));
    const append = (key: string, mark: string) => (tx: Parameters<Parameters<StateDb['enqueue']>[1]>[0]) => {
      tx.write(key, `${(tx.read(key, NOW) as string | undefined) ?? ''}${mark}`, 60_000, NOW);
    };
    const jobs = [
      db.enqueue([a!], append(a!, '1')),
      db.enqueue([a!, b!], (tx) => {
        append(a!, '2')(tx);
        append(b!, '2')(tx);
      }),
      db.enqueue([b!], append(b!, '3')),
      db.enqueue([c!], append(c!, '4')),
      db.enqueue([a!], append(a!, '5')),
      db.enqueue([c!, b!], (tx) => {
        append(b!, '6')(tx);
        append(c!, '6')(tx);
      }),
    ];
    await Promise.all(jobs.map(settled));
    expect(await settled(db.enqueue([a!, b!, c!], (tx) => [a, b, c].map((k) => tx.read(k!, NOW))))).toEqual([
      '125',
      '236',
      '46',
    ]);
  });

  it('a job touching a key it did not declare fails (it could be in a shard not locked), and writes nothing', async () => {
    const db = open(await tempDir(), 8);
    const [a, b] = keysInDistinctShards(8, 2).map((k) => id(k));
    const job = db.enqueue([a!], (tx) => {
      tx.write(a!, 1, 60_000, NOW);
      tx.write(b!, 1, 60_000, NOW);
    });
    await job.done;
    expect(job.error?.message).toMatch(/belongs to shard \d+ of 8.*declare every key/);
    expect(await settled(db.enqueue([a!, b!], (tx) => [tx.read(a!, NOW), tx.read(b!, NOW)]))).toEqual([
      undefined,
      undefined,
    ]);
  });

  it('a commit that fails after another shard committed: nothing runs twice, each job answers by what stands', async () => {
    const events: string[] = [];
    const db = new StateDb(await tempDir(), {
      owner: { option: 'dataDir', name: 'test' },
      durability: 'commit',
      cacheKeys: 100,
      clock: () => NOW,
      replayGrace: 0,
      shards: 8,
      log: (event) => events.push(event),
    });
    dbs.push(db);
    const [x, y] = keysInDistinctShards(8, 2).map((k) => id(k));
    // The outer shard (the lower index, locked first) is the one whose commit fails; the inner one
    // has committed by then. LMDB has no transaction across environments, so a disk failing
    // between the two is all this can be; it is injected here on the outer environment's handle.
    const [outer, inner] = shardOf(x!, 8) < shardOf(y!, 8) ? [x!, y!] : [y!, x!];
    const roots = (
      db as unknown as { shards: { env: { root: { transactionSync(f: () => unknown): unknown } } }[] }
    ).shards;
    const root = roots[shardOf(outer, 8)]!.env.root;
    const real = root.transactionSync.bind(root);
    let failures = 1;
    root.transactionSync = (body) =>
      real(() => {
        const result = body();
        if (failures-- > 0) throw new Error('the disk failed at commit');
        return result;
      });
    const bump = (key: string) => (tx: Parameters<Parameters<StateDb['enqueue']>[1]>[0]) => {
      const n = ((tx.read(key, NOW) as number | undefined) ?? 0) + 1;
      tx.write(key, n, 60_000, NOW);
      return n;
    };
    const both = db.enqueue([outer, inner], (tx) => [bump(outer)(tx), bump(inner)(tx)]);
    const innerOnly = db.enqueue([inner], bump(inner));
    const outerOnly = db.enqueue([outer], bump(outer));
    await Promise.all([both.done, innerOnly.done, outerOnly.done]);
    expect(events).toContain('partial-commit');
    // Over both shards: its inner write stands, its outer one was lost: an error, not run again.
    expect(both.error?.message).toBe('the disk failed at commit');
    // Within the inner (committed) shard: its write stands, its answer too.
    expect([innerOnly.result, innerOnly.error]).toEqual([2, undefined]);
    // Within the outer shard: run again alone, once.
    expect([outerOnly.result, outerOnly.error]).toEqual([1, undefined]);
    expect(
      await settled(db.enqueue([outer, inner], (tx) => [tx.read(outer, NOW), tx.read(inner, NOW)])),
    ).toEqual([1, 2]);
  });

  it('the count is fixed when the directory is made: another count is refused, naming both', async () => {
    const dir = await tempDir();
    await open(dir, 4).close();
    expect(() => open(dir, 2)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(/was made with 4 shards, and 2 were asked for/),
      }),
    );
    expect(open(dir, 4).shardCount).toBe(4);
  });

  it("a shard missing from a directory made earlier is refused (its keys' limits would restart), and not made", async () => {
    const dir = await tempDir();
    await open(dir, 4).close();
    rmSync(join(dir, 'shard-2'), { recursive: true });
    expect(() => open(dir)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(/made with 4 shards, and shard-2 is missing/),
      }),
    );
    expect(existsSync(join(dir, 'shard-2'))).toBe(false);
  });

  it("another layout's shard directories are refused: the first environment deleted, then another count", async () => {
    const dir = await tempDir();
    await open(dir, 8).close();
    for (const file of ['data.mdb', 'lock.mdb']) rmSync(join(dir, file));
    expect(() => open(dir, 3)).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(
          /holds shard-3 but no first environment \(data\.mdb\), and 3 shards were asked for/,
        ),
      }),
    );
  });

  it('shard directories holding keys without their first environment are refused, and nothing is made', async () => {
    const dir = await tempDir();
    const db = open(dir, 4);
    const keys = Array.from({ length: 40 }, (_, i) => id(`kept-${i}`));
    await settled(
      db.enqueue(keys, (tx) => {
        for (const k of keys) tx.write(k, 1, 60_000, NOW);
      }),
    );
    await db.close();
    for (const file of ['data.mdb', 'lock.mdb']) rmSync(join(dir, file));
    for (const shards of [undefined, 4]) {
      expect(() => open(dir, shards)).toThrow(
        expect.objectContaining({
          message: expect.stringMatching(
            /holds shard-\d with keys but no first environment \(data\.mdb\).*restore data\.mdb/,
          ),
        }),
      );
    }
    expect(existsSync(join(dir, 'data.mdb'))).toBe(false);
  });

  it('a shard directory past the count is refused', async () => {
    const dir = await tempDir();
    await open(dir, 2).close();
    mkdirSync(join(dir, 'shard-5'));
    expect(() => open(dir)).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(/made with 2 shards, and holds shard-5 past them/),
      }),
    );
  });

  it('a new directory whose start was cut short after its other shards were made is taken up on the next start', async () => {
    const dir = await tempDir();
    await open(dir, 4).close();
    // What a start killed before making the first environment leaves: the others (empty).
    for (const file of ['data.mdb', 'lock.mdb']) rmSync(join(dir, file));
    const again = open(dir, 4);
    expect(again.shardCount).toBe(4);
  });

  it('a directory made before shards (one environment) reads as 1 shard and refuses another count', async () => {
    const dir = await tempDir();
    const old = open(dir);
    await settled(old.enqueue([id('x')], (tx) => tx.write(id('x'), 'kept', 60_000, NOW)));
    await old.close();
    expect(() => open(dir, 4)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }));
    const again = open(dir, 1);
    expect(await settled(again.enqueue([id('x')], (tx) => tx.read(id('x'), NOW)))).toBe('kept');
  });

  it("a shard's directory is the state's own, but anything else beside the environment is still refused", async () => {
    const dir = await tempDir();
    await open(dir, 2).close();
    writeFileSync(join(dir, 'notes.txt'), 'someone else');
    expect(() => open(dir)).toThrow(
      expect.objectContaining({ message: expect.stringMatching(/notes\.txt/) }),
    );
  });

  it('the sweep removes expired keys from every shard', async () => {
    let now = NOW;
    const db = open(await tempDir(), 4, { clock: () => now });
    const keys = Array.from({ length: 40 }, (_, i) => id(`gone-${i}`));
    await settled(
      db.enqueue(keys, (tx) => {
        for (const k of keys) tx.write(k, 1, 1000, now);
      }),
    );
    now += 10_000;
    const step = db.sweep(1000, now);
    expect(step.removed).toBe(40);
    expect(db.count()).toBe(0);
  });

  it('maxKeys bounds the keys stored, shared evenly over the shards', async () => {
    const db = open(await tempDir(), 4, { maxKeys: 100 });
    for (let round = 0; round < 10; round++) {
      const keys = Array.from({ length: 50 }, (_, i) => id(`many-${round}-${i}`));
      await settled(
        db.enqueue(keys, (tx) => {
          for (const k of keys) tx.write(k, 1, 60_000, NOW);
        }),
      );
    }
    // At most ⌈100 / 4⌉ per shard after each transaction.
    expect(db.count()).toBeLessThanOrEqual(100);
    expect(db.count()).toBeGreaterThan(50);
  });
});
