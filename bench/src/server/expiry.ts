/**
 * Expiry at scale (issue 23, section 2): 1,000,000 live keys (a bucket refilled in a day), then
 * waves of 200,000 keys that are as good as new 5 s after their take. For each wave: how long
 * after the last of its keys expired the sweep had removed them all, and the data file's size,
 * so that growth from wave to wave (pages not reused) shows. The test suite runs the same at a
 * tenth of the size with a clock moved by hand (test/server/expiry.test.ts).
 *
 *   pnpm --filter @sluice/core build && pnpm --filter @sluice/redis build && pnpm --filter @sluice/server build
 *   node --import tsx bench/src/server/expiry.ts [--live 1000000] [--expiring 200000] [--waves 3]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';

const { values } = parseArgs({
  options: {
    live: { type: 'string', default: '1000000' },
    expiring: { type: 'string', default: '200000' },
    waves: { type: 'string', default: '3' },
  },
});
const LIVE = Number(values.live);
const EXPIRING = Number(values.expiring);
const REFILL_MS = 5000;
const cli = new URL('../../../packages/server/dist/cli.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sluice-expiry-'));
const port = 19_800 + Math.floor(Math.random() * 90);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
// Its disk use (allocated blocks): data.mdb is a sparse file as long as LMDB's map.
const dataFile = () => statSync(join(dir, 'data.mdb')).blocks * 512;

async function load(client: Redis, prefix: string, count: number, refillMs: number): Promise<void> {
  for (let from = 0; from < count; from += 10_000) {
    const pipeline = client.pipeline();
    for (let i = from; i < Math.min(count, from + 10_000); i++) {
      pipeline.call('RL.PREDUCE', `${prefix}${i}`, '2', String(refillMs));
    }
    await pipeline.exec();
  }
}

async function stored(client: Redis): Promise<number> {
  return Number(/keys_stored:(\d+)/.exec((await client.info()) as string)?.[1]);
}

console.log(`uptime before: ${uptime()}`);
const server: ChildProcess = spawn(process.execPath, [cli, '--port', String(port), '--data', dir], {
  stdio: 'ignore',
});
try {
  const client = new Redis({ port, retryStrategy: (n) => (n > 100 ? null : 200) });
  // Refused until the server listens: ioredis retries.
  client.on('error', () => {});
  await new Promise((resolve) => client.once('ready', resolve));
  let started = performance.now();
  await load(client, 'live:', LIVE, 86_400_000);
  console.log(
    `${LIVE.toLocaleString('en')} live keys loaded in ${((performance.now() - started) / 1000).toFixed(1)} s; data file ${mb(dataFile())}`,
  );
  console.log(
    '\n| wave | expired keys | all removed, after the last expired | keys stored after | data file after |',
  );
  console.log('|---|---|---|---|---|');
  for (let wave = 1; wave <= Number(values.waves); wave++) {
    started = performance.now();
    await load(client, `wave${wave}:`, EXPIRING, REFILL_MS);
    // The last key of the wave is as good as new REFILL_MS after its take, made by now.
    const lastExpiry = performance.now() + REFILL_MS;
    while ((await stored(client)) > LIVE) await new Promise((r) => setTimeout(r, 100));
    const after = (performance.now() - lastExpiry) / 1000;
    console.log(
      `| ${wave} | ${EXPIRING.toLocaleString('en')} | ${after.toFixed(1)} s | ${(await stored(client)).toLocaleString('en')} | ${mb(dataFile())} |`,
    );
  }
  client.disconnect();
} finally {
  await new Promise((resolve) => {
    server.once('exit', resolve);
    server.kill('SIGTERM');
  });
  rmSync(dir, { recursive: true, force: true });
  console.log(`\nuptime after: ${uptime()}`);
}
