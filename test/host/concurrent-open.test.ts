import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { HostStore } from '@sluice/host';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeScript } from '../setup/node-script.js';

/**
 * Several processes starting at once on a new directory (PM2 or `cluster` starting its workers)
 * must all open it. LMDB (lmdb-js 3.5.6) corrupts an environment that two processes create at
 * once with a write map: of 4 processes opening a new directory of 8 shards, a run in about ten
 * ended with one process killed by SIGSEGV and the others refusing a shard whose root database
 * listed `format`, the meta database's key. Opening environments that exist, the same 4 processes
 * never failed. So a new environment is never opened where it will live while it is made: each
 * process makes it aside and the first to finish links it into place, whole.
 */

const OPEN = await nodeScript(fileURLToPath(new URL('./open-process.ts', import.meta.url)));
const WATCH = await nodeScript(fileURLToPath(new URL('./watch-env-files.ts', import.meta.url)));

const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-concurrent-open-'));
  dirs.push(dir);
  return dir;
}

function run(
  script: string,
  args: string[],
): { child: ChildProcess; done: Promise<{ code: string; out: string; err: string }> } {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (err += chunk));
  const done = new Promise<{ code: string; out: string; err: string }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code: String(signal ?? code), out, err })),
  );
  return { child, done };
}

// The write map, and so the race, is Linux's only (state-env.ts).
describe.runIf(process.platform === 'linux')('HostStore: processes opening a new directory at once', () => {
  it("an environment's file appears in its directory only once it is made, never empty or half made", async () => {
    const dir = await tempDir();
    const path = join(dir, 'state');
    const stop = join(dir, 'stop');
    const files = [join(path, 'data.mdb'), join(path, 'shard-1', 'data.mdb')];
    const watcher = run(WATCH, [stop, ...files]);
    await new Promise<void>((resolve) => watcher.child.stdout!.once('data', () => resolve()));
    const opener = await run(OPEN, [path, '2']).done;
    writeFileSync(stop, '');
    const watched = await watcher.done;
    expect(opener).toMatchObject({ code: '0', err: '' });
    const first = JSON.parse(watched.out.split('\n')[1]!) as Record<string, number>;
    // Seen at its size once open (the write map's), not at 0 (created) or the meta pages' 8 KiB.
    for (const file of files)
      expect({ file, size: first[file] }).toEqual({ file, size: statSync(file).size });
  });

  it('4 processes starting together on a new directory of 8 shards all open it, 8 times over', async () => {
    for (let round = 0; round < 8; round++) {
      const path = join(await tempDir(), 'state');
      const results = await Promise.all(Array.from({ length: 4 }, () => run(OPEN, [path, '8', '0']).done));
      expect({ round, results }).toEqual({
        round,
        results: results.map(() => ({ code: '0', out: '0\n', err: '' })),
      });
    }
  });

  it('6 processes starting a few ms apart and checking at once: all open it and decide, 6 times over', async () => {
    for (let round = 0; round < 6; round++) {
      const path = join(await tempDir(), 'state');
      // Staggered: the later ones look at the directory while the first ones make it and then
      // write keys into its shards (a shard with keys and no first environment is refused).
      const results = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          await new Promise((resolve) => setTimeout(resolve, i * 15));
          return run(OPEN, [path, '8', '20']).done;
        }),
      );
      expect({ round, results: results.map((r) => ({ code: r.code, err: r.err })) }).toEqual({
        round,
        results: results.map(() => ({ code: '0', err: '' })),
      });
      // At least the limit: every process decided. Not "exactly": a process opening while another
      // commits can lose that commit (lmdb-js 3.5.6, the host README's known issue; reproduced by
      // scripts/lmdb-open-race.mjs), about one start in twenty here. Exactness once every process
      // has opened is cross-process.test.ts's.
      expect(results.reduce((sum, r) => sum + Number(r.out), 0)).toBeGreaterThanOrEqual(50);
    }
  });

  it('a making directory a crash left is no sign of foreign data; one of this process and thread is removed', async () => {
    const path = join(await tempDir(), 'state');
    const other = join(path, '.sluice-making-999999999-0');
    const own = join(path, `.sluice-making-${process.pid}-${threadId}`);
    for (const left of [other, own]) {
      mkdirSync(left, { recursive: true });
      writeFileSync(join(left, 'data.mdb'), 'half made');
    }
    const store = new HostStore({ path, shards: 1, logger: false });
    await store.shutdown();
    expect(existsSync(own)).toBe(false);
    expect(readdirSync(path).sort()).toEqual(['.sluice-making-999999999-0', 'data.mdb', 'lock.mdb']);
  });
});
