import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { serverExit, spawnServer } from './harness.js';

/**
 * Issue 36: `--shards` splits a new directory's state over several LMDB environments, so that
 * workers decide in parallel; a directory started with several workers gets 8 unless told; the
 * count is the directory's for good, and a server asked for another says so and stops.
 */
const made: string[] = [];
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-shards-'));
  made.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** RL.REDUCE of one token on `key`: the tokens there were before it (Smyte's reply). */
async function reduce(port: number, key: string): Promise<number> {
  const client = new Redis({ port, lazyConnect: true });
  try {
    await client.connect();
    return (await client.call('RL.REDUCE', key, '10', '60')) as number;
  } finally {
    client.disconnect();
  }
}

async function infoShards(port: number): Promise<number> {
  const client = new Redis({ port, lazyConnect: true });
  try {
    await client.connect();
    return Number(/^shards:(\d+)/m.exec((await client.info('persistence')) as string)?.[1]);
  } finally {
    client.disconnect();
  }
}

describe('sluice-server --shards', () => {
  it('a new directory started with --workers 2 gets 8 shards (INFO and the listening line say so), kept when restarted with one worker', async () => {
    const dir = await scratch();
    const several = await spawnServer(dir, undefined, ['--workers', '2']);
    try {
      expect(several.events().find((e) => e.event === 'listening')?.fields).toMatchObject({
        workers: 2,
        shards: 8,
      });
      expect(await infoShards(several.port)).toBe(8);
      expect(await reduce(several.port, 'kept')).toBe(10);
    } finally {
      await several.kill('SIGTERM');
    }
    for (let i = 1; i < 8; i++) expect(existsSync(join(dir, `shard-${i}`, 'data.mdb'))).toBe(true);
    const one = await spawnServer(dir);
    try {
      expect(await infoShards(one.port)).toBe(8);
      expect(await reduce(one.port, 'kept')).toBe(9);
    } finally {
      await one.kill('SIGTERM');
    }
  });

  it('a new directory of one worker gets 1 shard; --shards 4 gives it 4 (INFO and the listening line)', async () => {
    const plain = await spawnServer(await scratch());
    const four = await spawnServer(await scratch(), undefined, ['--shards', '4']);
    try {
      expect(await infoShards(plain.port)).toBe(1);
      expect(await infoShards(four.port)).toBe(4);
      expect(four.events().find((e) => e.event === 'listening')?.fields.shards).toBe(4);
    } finally {
      await plain.kill('SIGTERM');
      await four.kill('SIGTERM');
    }
  });

  for (const workers of ['1', '2']) {
    it(`another count than the directory's stops the start-up with a coded error naming both (--workers ${workers})`, async () => {
      const dir = await scratch();
      const first = await spawnServer(dir, undefined, ['--shards', '4']);
      await first.kill('SIGTERM');
      const { code, stderr } = await serverExit(dir, ['--shards', '2', '--workers', workers]);
      expect(code).toBe(2);
      expect(stderr).toContain('ERR_SLUICE_INVALID_OPTION');
      expect(stderr).toContain('was made with 4 shards, and 2 were asked for');
    });
  }

  for (const bad of ['0', '65']) {
    it(`--shards ${bad} is refused`, async () => {
      const { code, stderr } = await serverExit(await scratch(), ['--shards', bad]);
      expect(code).toBe(2);
      expect(stderr).toMatch(/shards must be an integer from 1 to 64/);
    });
  }
});
