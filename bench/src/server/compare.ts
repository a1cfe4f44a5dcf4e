/**
 * sluice-server against redis-server, and sluice-server on 1 then N cores, each side pinned with
 * taskset: the load generator (redis-benchmark, and this process for the Node row) on its own
 * core, the servers on the others.
 *
 * 1. Side by side, one core each: RL.PREDUCE against redis-server running the same token bucket
 *    with EVALSHA; redis-benchmark, 50 clients, 10,000 random keys, persistence on both (sluice:
 *    LMDB with the durability given; Redis: appendonly, fsync every second, the like-for-like
 *    promise), pipelined 16 and not pipelined, rounds interleaved (alternating which goes first),
 *    the ratio of each round's pair reported as a median and a range; then ServerStore against
 *    RedisStore from Node (Limiter.check awaited by 50 callers).
 * 2. Scaling: sluice-server with `--workers 1` on one core, then `--workers N` on N cores, same
 *    load; with the share of its time spent inside LMDB write transactions (INFO transaction_ms,
 *    the part LMDB runs one process at a time) and what Amdahl's law makes of it for 16 cores.
 *
 * Prints `uptime` before and after: read the figures against the machine's load.
 *
 *   pnpm --filter @sluice/core build && pnpm --filter @sluice/redis build && pnpm --filter @sluice/server build
 *   node --import tsx bench/src/server/compare.ts [--rounds 3] [--requests 100000] [--durability commit|flush]
 *     [--generator-core 0] [--server-cores 1] [--scaling 1:1,2:1-2] [--only side|scaling]
 *
 * `--scaling` lists `workers:cores` runs; by default 1 worker on the first server core, then one
 * worker per core on every core but the generator's (needs 3 cores or more to show scaling).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Limiter, type Store, tokenBucket } from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { ServerStore } from '../../../packages/server/src/index.js';
import { redisBenchmarkFigures } from '../lib/redis-benchmark.js';
import { loadBucketScript, redisPeerArgs } from './redis-peer.js';

const { values } = parseArgs({
  options: {
    durability: { type: 'string', default: 'commit' },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '100000' },
    'node-requests': { type: 'string', default: '20000' },
    'generator-core': { type: 'string', default: '0' },
    'server-cores': { type: 'string', default: '1' },
    scaling: { type: 'string' },
    only: { type: 'string' },
  },
});
const cli = new URL('../../../packages/server/dist/cli.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const basePort = 19_400 + Math.floor(Math.random() * 400);
const generatorCore = values['generator-core']!;
const serverCores = values['server-cores']!;
const cores = availableParallelism();

/** `workers:cores` runs of the scaling section. */
function scalingRuns(): { workers: number; cores: string }[] {
  if (values.scaling !== undefined) {
    return values.scaling.split(',').map((run) => {
      const [workers, set] = run.split(':');
      return { workers: Number(workers), cores: set! };
    });
  }
  const others = Array.from({ length: cores }, (_, i) => i).filter((c) => String(c) !== generatorCore);
  const first = String(others[0] ?? 0);
  if (others.length < 2) return [{ workers: 1, cores: first }];
  return [
    { workers: 1, cores: first },
    { workers: others.length, cores: others.join(',') },
  ];
}

function uptime(): string {
  return execFileSync('uptime', { encoding: 'utf8' }).trim();
}

/** Starts a server pinned to `cpuSet`, in its own process group, and waits until it answers PING. */
async function start(command: string, args: string[], port: number, cpuSet: string): Promise<ChildProcess> {
  const child = spawn('taskset', ['-c', cpuSet, command, ...args], { stdio: 'ignore', detached: true });
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

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
}

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/**
 * CPU time the processes of a group have used (user + system, all threads), µs, from /proc: a
 * server with `--workers` is its primary and its workers. Per decision, this varies less than
 * ops/s on a shared machine: a server waiting for the CPU is slow but not costly.
 */
function cpuUs(group: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Field 5 of /proc/pid/stat is the process group (3 after the command).
    if (Number(fields[2]) !== group) continue;
    total += (Number(fields[11]) + Number(fields[12])) * TICK_US;
  }
  return total;
}

/** INFO's transaction_ms of the server on `port` (one worker's: run it with --workers 1). */
function transactionMs(port: number): number {
  const info = execFileSync('redis-cli', ['-p', String(port), 'INFO'], { encoding: 'utf8' });
  return Number(/transaction_ms:(\d+)/.exec(info)?.[1] ?? Number.NaN);
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  /** The server's CPU µs per request. */
  cpu: number;
}

function bench(port: number, group: number, pipeline: number, command: string[]): Run {
  const cpuBefore = cpuUs(group);
  const out = execFileSync(
    'taskset',
    [
      '-c',
      generatorCore,
      'redis-benchmark',
      ...['-p', String(port), '-c', '50', '-P', String(pipeline), '-n', values.requests!],
      ...['-r', '10000', '--csv', ...command],
    ],
    { encoding: 'utf8' },
  );
  const cpu = (cpuUs(group) - cpuBefore) / Number(values.requests);
  return { ...redisBenchmarkFigures(out), cpu };
}

const SLUICE_COMMAND = ['RL.PREDUCE', 'key:__rand_int__', '100', '60000'];

/**
 * From Node, as the adapters use it: one Limiter (token bucket, 100 per minute) per store, 50
 * concurrent callers each awaiting `limiter.check(key)` over the same 10,000 random keys, one
 * ioredis connection per store (what an app holds). Returns decisions per second, and the CPU µs
 * per decision of the server and this client together.
 */
async function nodeBench(store: Store, serverGroup: number): Promise<{ rps: number; cpu: number }> {
  const limiter = new Limiter({
    algorithm: tokenBucket({ capacity: 100, refillAmount: 100, refillInterval: 60_000 }),
    store,
  });
  const total = Number(values['node-requests']);
  let issued = 0;
  const started = performance.now();
  const cpuBefore = cpuUs(serverGroup);
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
    cpu: (cpuUs(serverGroup) - cpuBefore + client.user + client.system) / total,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** µs per decision, medians: sluice / Redis. */
const cpuCell = (ours: { cpu: number }[], theirs: { cpu: number }[]) =>
  `${median(ours.map((r) => r.cpu)).toFixed(1)} / ${median(theirs.map((r) => r.cpu)).toFixed(1)}`;

/** The ratios of each round's pair (run back to back): median in bold, then the range. */
function ratios(perRound: number[]): string {
  const f = (x: number) => `${x.toFixed(2)}×`;
  return `**${f(median(perRound))}** (${f(Math.min(...perRound))}–${f(Math.max(...perRound))})`;
}

const sluiceArgs = (port: number, workers: number, data: string) => [
  cli,
  ...['--port', String(port), '--data', join(dir, data), '--durability', values.durability!],
  ...['--workers', String(workers)],
];

async function sideBySide(): Promise<void> {
  const sluicePort = basePort;
  const redisPort = basePort + 1;
  const sluice = await start(process.execPath, sluiceArgs(sluicePort, 1, 'side'), sluicePort, serverCores);
  const redis = await start('redis-server', redisPeerArgs(redisPort, dir), redisPort, serverCores);
  try {
    const sha = loadBucketScript(redisPort);
    // One untimed run each first: the measured rounds see warmed-up servers (JIT, page cache).
    bench(sluicePort, sluice.pid!, 16, SLUICE_COMMAND);
    bench(redisPort, redis.pid!, 16, ['EVALSHA', sha, '1', 'key:__rand_int__', '100', '100', '60000', '1']);
    const rows: string[] = [];
    for (const pipeline of [16, 1]) {
      const ours: Run[] = [];
      const theirs: Run[] = [];
      for (let round = 0; round < Number(values.rounds); round++) {
        // Alternate which goes first, so a load that drifts during the run weighs on both alike.
        const runOurs = () => ours.push(bench(sluicePort, sluice.pid!, pipeline, SLUICE_COMMAND));
        const runTheirs = () =>
          theirs.push(
            bench(redisPort, redis.pid!, pipeline, [
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
    const serverClient = new Redis({ port: sluicePort });
    const redisClient = new Redis({ port: redisPort });
    const serverStore = new ServerStore({ client: serverClient });
    // As bench/src/redis: no breaker, a long timeout, so this measures the stores.
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
      `\n## Side by side: sluice-server --durability ${values.durability} vs redis-server EVALSHA (appendfsync everysec), both on core(s) ${serverCores}, load generator on core ${generatorCore}; medians of ${values.rounds} rounds of ${values.requests} requests\n`,
    );
    console.log(
      "| load | sluice ops/s | p50 / p99 ms | Redis ops/s | p50 / p99 ms | sluice ÷ Redis, median of the rounds' ratios (range) | CPU µs per decision, sluice / Redis |",
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
  } finally {
    await stop(sluice);
    await stop(redis);
  }
}

async function scaling(): Promise<void> {
  const runs = scalingRuns();
  const rows: string[] = [];
  let serialShare: number | undefined;
  let single: Record<number, number> = {};
  for (const [i, run] of runs.entries()) {
    const port = basePort + 10 + i;
    const server = await start(
      process.execPath,
      sluiceArgs(port, run.workers, `scale-${i}`),
      port,
      run.cores,
    );
    try {
      bench(port, server.pid!, 16, SLUICE_COMMAND);
      const measured: Record<number, Run> = {};
      const txnBefore = transactionMs(port);
      const cpuBefore = cpuUs(server.pid!);
      for (const pipeline of [16, 1]) {
        const rounds = Array.from({ length: Number(values.rounds) }, () =>
          bench(port, server.pid!, pipeline, SLUICE_COMMAND),
        );
        measured[pipeline] = {
          rps: median(rounds.map((r) => r.rps)),
          p50: median(rounds.map((r) => r.p50)),
          p99: median(rounds.map((r) => r.p99)),
          cpu: median(rounds.map((r) => r.cpu)),
        };
      }
      if (run.workers === 1) {
        // One worker never waits for LMDB's lock: its transaction time is all work, serialised.
        serialShare = ((transactionMs(port) - txnBefore) * 1000) / (cpuUs(server.pid!) - cpuBefore);
        single = { 16: measured[16]!.rps, 1: measured[1]!.rps };
      }
      const speedup = (p: number) =>
        single[p] === undefined ? '' : ` (${(measured[p]!.rps / single[p]!).toFixed(2)}×)`;
      rows.push(
        `| ${run.workers} | ${run.cores} | ${Math.round(measured[16]!.rps)}${speedup(16)} | ${Math.round(measured[1]!.rps)}${speedup(1)} | ${measured[16]!.cpu.toFixed(1)} / ${measured[1]!.cpu.toFixed(1)} |`,
      );
    } finally {
      await stop(server);
    }
  }
  console.log(
    `\n## Scaling: sluice-server --workers N on N cores (taskset), load generator on core ${generatorCore}; medians of ${values.rounds} rounds of ${values.requests} requests\n`,
  );
  console.log(
    '| workers | cores | ops/s pipelined 16 (× 1 worker) | ops/s unpipelined (× 1 worker) | CPU µs per decision, P16 / P1 |',
  );
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  if (serialShare !== undefined) {
    const amdahl = (n: number) => 1 / (serialShare! + (1 - serialShare!) / n);
    console.log(
      `\nTime inside LMDB write transactions (serialised across workers), pipelined and unpipelined together: ${(100 * serialShare).toFixed(0)}% of one worker's CPU. Amdahl's law with that share: ${amdahl(2).toFixed(2)}× on 2 cores, ${amdahl(4).toFixed(2)}× on 4, ${amdahl(16).toFixed(2)}× on 16 (at most ${(1 / serialShare).toFixed(2)}× on any number), before the load generator's own limit (one redis-benchmark thread on one core).`,
    );
  }
  if (cores < 3 && values.scaling === undefined) {
    console.log(
      `\nOnly ${cores} cores: the load generator takes one, so no second server core is left and the scaling table has one row.`,
    );
  }
}

console.log(`uptime before: ${uptime()}`);
console.log(`${cores} cores (${cpus()[0]?.model}), ${new Date().toISOString()}`);
// This process (the Node row's load generator) runs on the generator's core too.
execFileSync('taskset', ['-a', '-p', '-c', generatorCore, String(process.pid)], { stdio: 'ignore' });
try {
  if (values.only !== 'scaling') await sideBySide();
  if (values.only !== 'side') await scaling();
} finally {
  rmSync(dir, { recursive: true, force: true });
  console.log(`\nuptime after: ${uptime()}`);
}
