import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SluiceServer } from '@sluice/server';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { serverExit, spawnServer, startServer } from './harness.js';

/** The part of lmdb-js this test uses. */
interface Lmdb {
  open(options: { path: string; noSubdir: boolean }): {
    put(key: string, value: unknown): Promise<boolean>;
    get(key: string): unknown;
    close(): Promise<void>;
  };
}

// lmdb as the server's state layer (@sluice/host) resolves it (the workspace root does not depend on it).
const { open } = createRequire(new URL('../../packages/host/package.json', import.meta.url))('lmdb') as Lmdb;

/**
 * Issue 23, section 0: the data directory is handed to the server the way services get one (an
 * empty directory, a mounted volume, `mktemp -d`), and a directory holding anything else is
 * refused with an error that says so.
 */
const made: string[] = [];
async function scratch(prefix = 'tmp.'): Promise<string> {
  // `mktemp -d` names directories tmp.XXXXXXXXXX: a dot in the name.
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('sluice-server --data', () => {
  it('starts on an existing, empty directory (mktemp -d) and keeps its state there across a restart', async () => {
    const dir = await scratch();
    const first = await spawnServer(dir);
    const client = new Redis({ host: '127.0.0.1', port: first.port });
    try {
      expect(await client.call('RL.REDUCE', 'k', '5', '3600')).toBe(5);
    } finally {
      client.disconnect();
      await first.kill('SIGTERM');
    }
    const second = await spawnServer(dir);
    const again = new Redis({ host: '127.0.0.1', port: second.port });
    try {
      expect(await again.call('RL.GET', 'k', '5', '3600')).toBe(4);
    } finally {
      again.disconnect();
      await second.kill('SIGTERM');
    }
  });

  it('creates a directory for a path that does not exist yet, dot in its name or not', async () => {
    const base = await scratch('sluice-data-dir-');
    for (const name of ['state.v2', 'plain']) {
      const dir = join(base, 'nested', name);
      const t = await startServer({}, dir);
      const client = await t.client();
      expect(await client.call('RL.REDUCE', 'k', '2', '60')).toBe(2);
      await t.stop(true);
      expect((await stat(dir)).isDirectory(), name).toBe(true);
    }
  });

  it('tolerates lost+found (a freshly formatted volume mounted there)', async () => {
    const dir = await scratch();
    await mkdir(join(dir, 'lost+found'));
    const t = await startServer({}, dir);
    const client = await t.client();
    expect(await client.call('RL.REDUCE', 'k', '2', '60')).toBe(2);
    await t.stop(true);
  });

  it("tolerates a sparse-file probe another process (or a crash) left: the write map's check of the filesystem", async () => {
    const dir = await scratch();
    await writeFile(join(dir, '.sluice-sparse-probe-123-0'), '');
    const t = await startServer({}, dir);
    const client = await t.client();
    expect(await client.call('RL.REDUCE', 'k', '2', '60')).toBe(2);
    await t.stop(true);
  });

  it('starts on an empty data.mdb (a first open cut short) and sets it up', async () => {
    const dir = await scratch();
    await writeFile(join(dir, 'data.mdb'), '');
    const t = await startServer({}, dir);
    const client = await t.client();
    expect(await client.call('RL.REDUCE', 'k', '2', '60')).toBe(2);
    await t.stop(true);
    expect((await readdir(dir)).sort()).toEqual(['data.mdb', 'lock.mdb']);
  });

  it('refuses a directory holding files that are not a sluice environment, naming them, and leaves it alone', async () => {
    const dir = await scratch();
    await writeFile(join(dir, 'notes.txt'), 'mine');
    const { code, stderr } = await serverExit(dir);
    expect(code).toBe(2);
    expect(stderr).toContain('ERR_SLUICE_INVALID_OPTION');
    expect(stderr).toContain(dir);
    expect(stderr).toContain('not a sluice-server environment');
    expect(stderr).toContain('notes.txt');
    expect(await readdir(dir)).toEqual(['notes.txt']);
    expect(() => new SluiceServer({ dataDir: dir })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
  });

  it("refuses another program's LMDB environment (or an old-format one) instead of writing into it", async () => {
    const dir = await scratch();
    const other = open({ path: dir, noSubdir: false });
    await other.put('users:1', { name: 'ada' });
    await other.close();
    const size = (await stat(join(dir, 'data.mdb'))).size;
    const { code, stderr } = await serverExit(dir);
    expect(code).toBe(2);
    expect(stderr).toContain('not a sluice-server environment');
    // Opened for writing with a write map, LMDB would have grown it to the map's size (64 GiB).
    expect((await stat(join(dir, 'data.mdb'))).size).toBe(size);
    const again = open({ path: dir, noSubdir: false });
    try {
      expect(again.get('users:1')).toEqual({ name: 'ada' });
    } finally {
      await again.close();
    }
  });

  it('refuses a path that is a file', async () => {
    const dir = await scratch();
    const file = join(dir, 'data.file');
    await writeFile(file, 'x');
    const { code, stderr } = await serverExit(file);
    expect(code).toBe(2);
    expect(stderr).toContain('is not a directory');
  });
});
