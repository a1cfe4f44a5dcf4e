/**
 * Reproduces a defect of lmdb-js 3.5.6 (the newest at the time) that HostStore and sluice-server
 * inherit: a process opening an LMDB environment while another process commits can lose that
 * commit. Its bundled LMDB sets the shared "last transaction id" from the meta page it read at open
 * (mdb.c, mdb_env_open2: `env->me_txns->mti_txnid = meta.mm_txnid`) in every opener, not only the
 * first; a commit made meanwhile then has its id handed out again and its meta page overwritten
 * (upstream LMDB's ITS#9496 removed that assignment).
 *
 * Each round makes an environment holding a counter, then starts 6 processes 15 ms apart, each
 * incrementing the counter 50 times in write transactions: the later ones open while the earlier
 * ones commit. A round where the counter ends below 1 + 6 × 50 lost commits. With `--barrier`
 * every process opens first and all start writing together, a second and a half later: no round
 * should lose anything.
 *
 * usage: node scripts/lmdb-open-race.mjs [rounds=30] [--barrier] [--no-writemap]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const { open } = createRequire(new URL('../packages/host/package.json', import.meta.url))('lmdb');
const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const useWritemap = !args.includes('--no-writemap');
const openEnv = (path, readOnly = false) => {
  const root = open({
    path,
    mapSize: 2 ** 36,
    noSync: true,
    useWritemap,
    readOnly,
    keyEncoding: 'binary',
    encoding: 'binary',
  });
  return { root, db: root.openDB({ name: 'state', keyEncoding: 'binary', encoding: 'msgpack' }) };
};
const KEY = Buffer.from('counter');

if (args[0] === '--child') {
  const [, path, n] = args;
  const start = args.slice(3).find((a) => /^\d+$/.test(a));
  const { root, db } = openEnv(path);
  if (start !== undefined) await new Promise((resolve) => setTimeout(resolve, Number(start) - Date.now()));
  for (let i = 0; i < Number(n); i++) {
    root.transactionSync(() => db.putSync(KEY, (db.get(KEY) ?? 0) + 1));
    await new Promise((resolve) => setImmediate(resolve));
  }
  process.exit(0);
}

const rounds = Number(args.find((a) => /^\d+$/.test(a)) ?? 30);
const barrier = args.includes('--barrier');
let lost = 0;
for (let round = 0; round < rounds; round++) {
  const dir = mkdtempSync(join(tmpdir(), 'lmdb-open-race-'));
  spawnSync(process.execPath, [self, '--child', dir, '1', ...(useWritemap ? [] : ['--no-writemap'])]);
  const start = String(Date.now() + 1500);
  await Promise.all(
    Array.from({ length: 6 }, async (_, i) => {
      if (!barrier) await new Promise((resolve) => setTimeout(resolve, i * 15));
      const child = spawn(
        process.execPath,
        [self, '--child', dir, '50', ...(barrier ? [start] : []), ...(useWritemap ? [] : ['--no-writemap'])],
        { stdio: 'inherit' },
      );
      await new Promise((resolve) => child.once('exit', resolve));
    }),
  );
  const { root, db } = openEnv(dir, true);
  const counter = db.get(KEY);
  await root.close();
  rmSync(dir, { recursive: true, force: true });
  if (counter !== 301) {
    lost++;
    console.log(`round ${round}: counter ${counter}, expected 301`);
  }
}
console.log(
  `${lost} of ${rounds} rounds lost commits (${barrier ? 'all open before any write' : 'opens while others commit'}, ${useWritemap ? 'write map' : 'no write map'})`,
);
