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

/** Starts a server and waits until it answers PING (a loaded machine may take seconds to start node). */
async function start(command: string, args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: 'ignore' });
  for (let tries = 0; ; tries++) {
    await new Promise((r) => setTimeout(r, 200));
    try {
      execFileSync('redis-cli', ['-p', String(port), 'PING'], { stdio: 'ignore' });
      return child;
    } catch (err) {
      if (tries > 150) throw err;
    }
  }
}

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/**
 * CPU time a process has used (user + system, all threads), µs, from /proc. Per decision, this
 * varies less than ops/s on a shared machine: a server waiting for the CPU is slow but not costly.
 */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  /** The server's CPU µs per request. */
  cpu: number;
}

function bench(port: number, pid: number, pipeline: number, command: string[]): Run {
  const cpuBefore = cpuUs(pid);
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
  const cpu = (cpuUs(pid) - cpuBefore) / Number(values.requests);
  return { rps: Number(row[1]), p50: Number(row[4]), p99: Number(row[6]), cpu };
}

/**
 * From Node, as the adapters use it: one Limiter (token bucket, 100 per minute) per store, 50
 * concurrent callers each awaiting \`limiter.check(key)\` over the same 10,000 random keys, one
 * ioredis connection per store (what an app holds). Returns decisions per second, and the CPU µs
 * per decision of the server and this client together.
 */
async function nodeBench(store: Store, serverPid: number): Promise<{ rps: number; cpu: number }> {
  const limiter = new Limiter({
    algorithm: tokenBucket({ capacity: 100, refillAmount: 100, refillInterval: 60_000 }),
    store,
  });
  const total = Number(values['node-requests']);
  let issued = 0;
  const started = performance.now();
  const cpuBefore = cpuUs(serverPid);
  const clientBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (issued < total) {
        issued++;
        await limiter.check(`node:${Math.floor(Math.random() * 10_000)}`);
      }
    }),
  );
  const client = process.cpuUsage(clientBefore);
  return {
    rps: total / ((performance.now() - started) / 1000),
    cpu: (cpuUs(serverPid) - cpuBefore + client.user + client.system) / total,
  };
}

/** µs per decision, medians: sluice / Redis. */
const cpuCell = (ours: { cpu: number }[], theirs: { cpu: number }[]) =>
  `${median(ours.map((r) => r.cpu)).toFixed(1)} / ${median(theirs.map((r) => r.cpu)).toFixed(1)}`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The ratios of each round's pair (run back to back): median in bold, then the range. */
function ratios(perRound: number[]): string {
  const f = (x: number) => `${x.toFixed(2)}×`;
  return `**${f(median(perRound))}** (${f(Math.min(...perRound))}–${f(Math.max(...perRound))})`;
}

const sluice = await start(
  process.execPath,
  [cli, '--port', String(SLUICE_PORT), '--data', join(dir, 'sluice'), '--durability', values.durability!],
  SLUICE_PORT,
);
const redis = await start(
  'redis-server',
  [
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
  ],
  REDIS_PORT,
);
try {
  const sha = execFileSync(
    'redis-cli',
    ['-p', String(REDIS_PORT), 'SCRIPT', 'LOAD', readFileSync(join(here, 'token-bucket.lua'), 'utf8')],
    { encoding: 'utf8' },
  ).trim();
  const rows: string[] = [];
  for (const pipeline of [16, 1]) {
    const ours: Run[] = [];
    const theirs: Run[] = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      // Alternate which goes first, so a load that drifts during the run weighs on both alike.
      const runOurs = () =>
        ours.push(
          bench(SLUICE_PORT, sluice.pid!, pipeline, ['RL.PREDUCE', 'key:__rand_int__', '100', '60000']),
        );
      const runTheirs = () =>
        theirs.push(
          bench(REDIS_PORT, redis.pid!, pipeline, [
            'EVALSHA',
            sha,
            '1',
            'key:__rand_int__',
            '100',
            '100',
            '60000',
            '1',
          ]),
        );
      for (const run of round % 2 === 0 ? [runOurs, runTheirs] : [runTheirs, runOurs]) run();
    }
    const [o, t] = [ours, theirs].map((runs) => ({
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
    }));
    rows.push(
      `| 50 clients, pipelined ${pipeline} | ${Math.round(o!.rps)} | ${o!.p50} / ${o!.p99} | ${Math.round(t!.rps)} | ${t!.p50} / ${t!.p99} | ${ratios(ours.map((r, i) => r.rps / theirs[i]!.rps))} | ${cpuCell(ours, theirs)} |`,
    );
  }
  const serverClient = new Redis({ port: SLUICE_PORT });
  const redisClient = new Redis({ port: REDIS_PORT });
  const serverStore = new ServerStore({ client: serverClient });
  // As bench/src/redis: no breaker, a long timeout (ServerStore has neither), so this measures the stores.
  const redisStore = new RedisStore({ client: redisClient, timeout: 10_000, breaker: false });
  const viaServer: { rps: number; cpu: number }[] = [];
  const viaRedis: { rps: number; cpu: number }[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    if (round % 2 === 0) {
      viaServer.push(await nodeBench(serverStore, sluice.pid!));
      viaRedis.push(await nodeBench(redisStore, redis.pid!));
    } else {
      viaRedis.push(await nodeBench(redisStore, redis.pid!));
      viaServer.push(await nodeBench(serverStore, sluice.pid!));
    }
  }
  const [s, r] = [median(viaServer.map((v) => v.rps)), median(viaRedis.map((v) => v.rps))];
  rows.push(
    `| Node, 50 callers awaiting \`Limiter.check\` (ServerStore vs RedisStore) | ${Math.round(s)} | | ${Math.round(r)} | | ${ratios(viaServer.map((v, i) => v.rps / viaRedis[i]!.rps))} | ${cpuCell(viaServer, viaRedis)} (server + client) |`,
  );
  redisStore.shutdown();
  serverClient.disconnect();
  redisClient.disconnect();
  console.log(
    `sluice-server --durability ${values.durability} vs redis-server EVALSHA (appendfsync everysec); ${cpus().length} cores (${cpus()[0]?.model}), ${new Date().toISOString()}, medians of ${values.rounds} rounds of ${values.requests} requests\n`,
  );
  console.log(
    "| load | sluice ops/s | p50 / p99 ms | Redis ops/s | p50 / p99 ms | sluice ÷ Redis, median of the rounds' ratios (range) | CPU µs per decision, sluice / Redis |",
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  sluice.kill('SIGTERM');
  redis.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  rmSync(dir, { recursive: true, force: true });
}
