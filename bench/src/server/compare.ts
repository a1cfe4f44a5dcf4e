/**
 * sluice-server RL.REDUCE against redis-server running the same token bucket with EVALSHA, side
 * by side in one run: redis-benchmark, the same 50 clients and 10,000 random keys, persistence on
 * both (sluice: LMDB with the durability given; Redis: appendonly, fsync every second), pipelined
 * 16 and not pipelined, rounds interleaved (alternating which goes first), the ratio of each
 * round's pair reported as a median and a range; then ServerStore against RedisStore
 * from Node (Limiter.check awaited by 50 callers), in the same run.
 *
 *   pnpm --filter @sluice/core build && pnpm --filter @sluice/server build && node --import tsx bench/src/server/compare.ts [--durability commit|flush] [--rounds 3]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Limiter, type Store, tokenBucket } from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { ServerStore } from '../../../packages/server/src/index.js';

const { values } = parseArgs({
  options: {
    durability: { type: 'string', default: 'commit' },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '100000' },
    'node-requests': { type: 'string', default: '20000' },
  },
});
const here = new URL('.', import.meta.url).pathname;
const cli = new URL('../../../packages/server/dist/cli.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const SLUICE_PORT = 19_400 + Math.floor(Math.random() * 500);
const REDIS_PORT = SLUICE_PORT + 1;

async function start(command: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1500));
  return child;
}

function bench(port: number, pipeline: number, command: string[]): { rps: number; p50: number; p99: number } {
  const out = execFileSync(
    'redis-benchmark',
    [
      '-p',
      String(port),
      '-c',
      '50',
      '-P',
      String(pipeline),
      '-n',
      values.requests!,
      '-r',
      '10000',
      '--csv',
      ...command,
    ],
    { encoding: 'utf8' },
  );
  const row = out
    .trim()
    .split('\n')
    .at(-1)!
    .split('","')
    .map((f) => f.replaceAll('"', ''));
  return { rps: Number(row[1]), p50: Number(row[4]), p99: Number(row[6]) };
}

/**
 * From Node, as the adapters use it: one Limiter (token bucket, 100 per minute) per store, 50
 * concurrent callers each awaiting \`limiter.check(key)\` over the same 10,000 random keys, one
 * ioredis connection per store (what an app holds). Returns decisions per second.
 */
async function nodeBench(store: Store): Promise<number> {
  const limiter = new Limiter({
    algorithm: tokenBucket({ capacity: 100, refillAmount: 100, refillInterval: 60_000 }),
    store,
  });
  const total = Number(values['node-requests']);
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (issued < total) {
        issued++;
        await limiter.check(`node:${Math.floor(Math.random() * 10_000)}`);
      }
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The ratios of each round's pair (run back to back): median in bold, then the range. */
function ratios(perRound: number[]): string {
  const f = (x: number) => `${x.toFixed(2)}×`;
  return `**${f(median(perRound))}** (${f(Math.min(...perRound))}–${f(Math.max(...perRound))})`;
}

const sluice = await start(process.execPath, [
  cli,
  '--port',
  String(SLUICE_PORT),
  '--data',
  join(dir, 'sluice'),
  '--durability',
  values.durability!,
]);
const redis = await start('redis-server', [
  '--port',
  String(REDIS_PORT),
  '--bind',
  '127.0.0.1',
  '--dir',
  dir,
  '--appendonly',
  'yes',
  '--appendfsync',
  'everysec',
  '--save',
  '',
]);
try {
  const sha = execFileSync(
    'redis-cli',
    ['-p', String(REDIS_PORT), 'SCRIPT', 'LOAD', readFileSync(join(here, 'token-bucket.lua'), 'utf8')],
    { encoding: 'utf8' },
  ).trim();
  const rows: string[] = [];
  for (const pipeline of [16, 1]) {
    const ours: ReturnType<typeof bench>[] = [];
    const theirs: ReturnType<typeof bench>[] = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      // Alternate which goes first, so a load that drifts during the run weighs on both alike.
      const runOurs = () =>
        ours.push(bench(SLUICE_PORT, pipeline, ['RL.PREDUCE', 'key:__rand_int__', '100', '60000']));
      const runTheirs = () =>
        theirs.push(
          bench(REDIS_PORT, pipeline, ['EVALSHA', sha, '1', 'key:__rand_int__', '100', '100', '60000', '1']),
        );
      for (const run of round % 2 === 0 ? [runOurs, runTheirs] : [runTheirs, runOurs]) run();
    }
    const [o, t] = [ours, theirs].map((runs) => ({
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
    }));
    rows.push(
      `| 50 clients, pipelined ${pipeline} | ${Math.round(o!.rps)} | ${o!.p50} / ${o!.p99} | ${Math.round(t!.rps)} | ${t!.p50} / ${t!.p99} | ${ratios(ours.map((r, i) => r.rps / theirs[i]!.rps))} |`,
    );
  }
  const serverClient = new Redis({ port: SLUICE_PORT });
  const redisClient = new Redis({ port: REDIS_PORT });
  const serverStore = new ServerStore({ client: serverClient });
  // As bench/src/redis: no breaker, a long timeout (ServerStore has neither), so this measures the stores.
  const redisStore = new RedisStore({ client: redisClient, timeout: 10_000, breaker: false });
  const viaServer: number[] = [];
  const viaRedis: number[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    if (round % 2 === 0) {
      viaServer.push(await nodeBench(serverStore));
      viaRedis.push(await nodeBench(redisStore));
    } else {
      viaRedis.push(await nodeBench(redisStore));
      viaServer.push(await nodeBench(serverStore));
    }
  }
  const [s, r] = [median(viaServer), median(viaRedis)];
  rows.push(
    `| Node, 50 callers awaiting \`Limiter.check\` (ServerStore vs RedisStore) | ${Math.round(s)} | | ${Math.round(r)} | | ${ratios(viaServer.map((v, i) => v / viaRedis[i]!))} |`,
  );
  redisStore.shutdown();
  serverClient.disconnect();
  redisClient.disconnect();
  console.log(
    `sluice-server --durability ${values.durability} vs redis-server EVALSHA (appendfsync everysec); ${cpus().length} cores (${cpus()[0]?.model}), ${new Date().toISOString()}, medians of ${values.rounds} rounds of ${values.requests} requests\n`,
  );
  console.log(
    "| load | sluice ops/s | p50 / p99 ms | Redis ops/s | p50 / p99 ms | sluice ÷ Redis, median of the rounds' ratios (range) |",
  );
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  sluice.kill('SIGTERM');
  redis.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  rmSync(dir, { recursive: true, force: true });
}
