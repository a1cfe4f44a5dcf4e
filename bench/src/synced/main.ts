/**
 * SyncedStore (issue 13), measured side by side in one run, against the BUILT packages:
 *
 * 1. In process: decisions/s through a Limiter on a SyncedStore (a live Redis, its timer syncing
 *    every 100 ms) and on a MemoryStore, interleaved rounds, hot key and 10,000 keys.
 * 2. Redis commands per second as a function of the request rate and the interval: one node at a
 *    paced request rate over 1,000 keys; script calls counted by Redis (`INFO commandstats`), with
 *    Redis CPU per request. The point of the mode: flat in the request rate.
 *
 * Writes bench/results/synced.md. usage: node --import tsx src/synced/main.ts [--quick] [--only=in-process]
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Algorithm, fixedWindow, gcra, Limiter, MemoryStore, type Store } from '@sluice/core';
import { RedisStore, SyncedStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { machine } from '../lib/machine.js';
import { startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';

const quick = process.argv.includes('--quick');
/** `--only=in-process` measures that part alone and prints it (the results file is written by full runs only). */
const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
const ROUND_MS = quick ? 100 : 300;
const ROUNDS = quick ? 3 : 7;
const HIGH = 1_000_000_000;
const HOUR = 3_600_000;
const log = (line: string) => process.stderr.write(`${line}\n`);

const ALGORITHMS: Record<string, () => Algorithm> = {
  'fixed-window': () => fixedWindow({ limit: HIGH, window: HOUR }),
  gcra: () => gcra({ rate: 1000, period: HOUR, burst: HIGH }),
};

/** Decisions per second of `limiter` for about `ms`, cycling through `keys`. */
async function drive(limiter: Limiter, keys: readonly string[], ms: number, cursor: { i: number }) {
  let ops = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let b = 0; b < 1000; b++) {
      const d = limiter.check(keys[cursor.i]!);
      if (d instanceof Promise) await d;
      if (++cursor.i === keys.length) cursor.i = 0;
    }
    ops += 1000;
    elapsed = performance.now() - start;
    // Let the sync timer run, as a server's event loop would between requests.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return ops / (elapsed / 1000);
}

async function inProcess(port: number) {
  const rows: string[] = [];
  const ratios: number[] = [];
  for (const [name, make] of Object.entries(ALGORITHMS)) {
    for (const count of [1, 10_000]) {
      const keys = count === 1 ? ['hot'] : Array.from({ length: count }, (_, i) => `user:${i}`);
      const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
      const synced = new SyncedStore({ client, interval: '100ms' });
      const stores: [string, Store][] = [
        ['MemoryStore', new MemoryStore()],
        ['SyncedStore', synced],
      ];
      const subjects = stores.map(([label, store]) => ({
        label,
        limiter: new Limiter({ algorithm: make(), store }),
        cursor: { i: 0 },
        rounds: [] as number[],
      }));
      for (const s of subjects) await drive(s.limiter, keys, ROUND_MS, s.cursor);
      for (let r = 0; r < ROUNDS; r++) {
        for (const s of subjects) s.rounds.push(await drive(s.limiter, keys, ROUND_MS, s.cursor));
      }
      const [memory, sync] = subjects.map((s) => median(s.rounds)) as [number, number];
      const pairs = subjects[0]!.rounds.map((m, i) => subjects[1]!.rounds[i]! / m);
      ratios.push(median(pairs));
      rows.push(
        `| ${name} | ${count === 1 ? 'hot key' : '10,000 keys'} | ${formatRate(memory)} | ${formatRate(sync)} | ${formatRatio(median(pairs))} |`,
      );
      log(`  ${name} ${count}: memory ${formatRate(memory)}/s, synced ${formatRate(sync)}/s`);
      await synced.shutdown();
      client.disconnect();
    }
  }
  return { rows, ratios };
}

/**
 * What `exactAbove` costs: a key past the threshold is decided in Redis (a sync of the key, then
 * RedisStore's script), so it is compared with RedisStore itself and with the same key decided
 * locally. Awaited one at a time, as one request after another; 10,000 keys would only spread the
 * same round trips. Fixed window of 1e9: a first check of 600 M units puts the key past
 * `exactAbove: 0.5`, and it stays there (allowed) for the whole run.
 */
async function exactCost(port: number) {
  const algorithm = fixedWindow({ limit: HIGH, window: HOUR });
  const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
  const make: [string, () => Store][] = [
    ['SyncedStore, key below exactAbove (local)', () => new SyncedStore({ client, interval: '100ms' })],
    [
      'SyncedStore, key past exactAbove: 0.5 (exact)',
      () => new SyncedStore({ client, interval: '100ms', exactAbove: 0.5 }),
    ],
    ['RedisStore (every decision in Redis)', () => new RedisStore({ client })],
  ];
  const subjects = make.map(([label, store], i) => ({
    label,
    store: store(),
    key: `exact:${i}`,
    rounds: [] as number[],
    cursor: { i: 0 },
  }));
  const limiters = subjects.map((s) => new Limiter({ algorithm, store: s.store }));
  for (const [i, s] of subjects.entries()) {
    if (i === 1) await limiters[i]!.check(s.key, { cost: 600_000_000 });
    const d = await limiters[i]!.check(s.key);
    if (!d.allowed) throw new Error(`${s.label}: refused while warming up`);
  }
  const drive1 = async (limiter: Limiter, key: string, ms: number) => {
    let ops = 0;
    const start = performance.now();
    while (performance.now() - start < ms) {
      for (let b = 0; b < 100; b++) {
        const d = await limiter.check(key);
        if (!d.allowed) throw new Error('refused during the exactAbove bench');
      }
      ops += 100;
    }
    return ops / ((performance.now() - start) / 1000);
  };
  for (const [i, s] of subjects.entries()) await drive1(limiters[i]!, s.key, ROUND_MS);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, s] of subjects.entries()) s.rounds.push(await drive1(limiters[i]!, s.key, ROUND_MS));
  }
  const rows = subjects.map((s) => {
    const rate = median(s.rounds);
    const versus = median(s.rounds.map((v, i) => v / subjects[2]!.rounds[i]!));
    log(`  ${s.label}: ${formatRate(rate)}/s`);
    return `| ${s.label} | ${formatRate(rate)} | ${formatRatio(versus)} |`;
  });
  for (const s of subjects) await s.store.shutdown();
  client.disconnect();
  return rows;
}

/** Script calls and Redis CPU µs so far. */
async function redisSide(admin: Redis): Promise<{ calls: number; cpu: number }> {
  const info = `${await admin.info('commandstats')}\n${await admin.info('cpu')}`;
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(m[2]);
  const cpu =
    (Number(/^used_cpu_user:([\d.]+)/m.exec(info)?.[1] ?? 0) +
      Number(/^used_cpu_sys:([\d.]+)/m.exec(info)?.[1] ?? 0)) *
    1e6;
  return { calls, cpu };
}

/** One node at `rate` requests/s over 1,000 keys for `ms`, syncing every `interval` ms. */
async function commands(port: number, admin: Redis, rate: number, interval: number, ms: number) {
  const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
  const store = new SyncedStore({ client, interval });
  const limiter = new Limiter({ algorithm: ALGORITHMS.gcra!(), store });
  const before = await redisSide(admin);
  const start = performance.now();
  let sent = 0;
  let k = 0;
  while (performance.now() - start < ms) {
    // Paced: catch up to the rate every millisecond or so.
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    for (; sent < due; sent++) {
      limiter.check(`user:${k}`);
      k = (k + 1) % 1000;
    }
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
  const seconds = (performance.now() - start) / 1000;
  const after = await redisSide(admin);
  await store.shutdown();
  client.disconnect();
  return {
    achieved: sent / seconds,
    perSecond: (after.calls - before.calls) / seconds,
    cpuPerRequest: (after.cpu - before.cpu) / Math.max(1, sent),
  };
}

async function main(): Promise<void> {
  const info = machine();
  const machineLine = `${info.cpu}, ${info.cores} cores, Node ${info.node}, ${info.date.slice(0, 10)}`;
  log(`SyncedStore bench (${quick ? 'quick' : 'full'}) · ${machineLine}`);
  const redis = await startRedis();
  const admin = new Redis({ host: '127.0.0.1', port: redis.port });
  try {
    log('== in process');
    const inProc = await inProcess(redis.port);
    if (only === 'in-process') {
      for (const row of inProc.rows) log(row);
      return;
    }
    log('== exactAbove');
    const exact = await exactCost(redis.port);
    log('== Redis commands');
    const table: string[] = [];
    for (const interval of [10, 100, 1000]) {
      for (const rate of [1_000, 10_000, 50_000]) {
        const ms = Math.max(quick ? 1000 : 3000, 3 * interval);
        const r = await commands(redis.port, admin, rate, interval, ms);
        table.push(
          `| ${interval} ms | ${formatRate(rate)} (${formatRate(r.achieved)}) | ${r.perSecond.toFixed(1)} | ${r.cpuPerRequest.toFixed(2)} |`,
        );
        log(`  interval ${interval} ms, ${rate}/s: ${r.perSecond.toFixed(1)} script calls/s`);
      }
    }
    const md = [
      `# SyncedStore benchmarks (${quick ? 'quick mode' : 'full run'})`,
      '',
      `**Machine**: ${machineLine}: a shared 2-core VM; read the ratios. Command: \`pnpm build && cd bench && node --import tsx src/synced/main.ts${quick ? ' --quick' : ''}\`.`,
      '',
      `## In process: decisions/s through a Limiter (median of ${ROUNDS} interleaved rounds of ${ROUND_MS} ms; SyncedStore on a live Redis, syncing every 100 ms)`,
      '',
      '| algorithm | keys | MemoryStore | SyncedStore | SyncedStore ÷ MemoryStore (per round, median) |',
      '| --- | --- | --- | --- | --- |',
      ...inProc.rows,
      '',
      `Issue 13's target, SyncedStore ≥ 0.9× MemoryStore in every row: **${inProc.ratios.every((r) => r >= 0.9) ? 'met' : 'not met'}** (lowest ${formatRatio(Math.min(...inProc.ratios))}).`,
      '',
      `## What \`exactAbove\` costs: one key, awaited one decision at a time (median of ${ROUNDS} interleaved rounds of ${ROUND_MS} ms)`,
      '',
      "A key past the threshold is decided in Redis: the node first syncs what it consumed on the key, then runs RedisStore's script on it, two round trips per decision. Below the threshold the same key is decided locally.",
      '',
      '| subject | decisions/s | ÷ RedisStore (per round, median) |',
      '| --- | --- | --- |',
      ...exact,
      '',
      '## Redis script calls per second, one node, 1,000 keys, GCRA (`INFO commandstats`)',
      '',
      '| interval | requests/s (achieved) | script calls/s | Redis CPU µs per request |',
      '| --- | --- | --- | --- |',
      ...table,
      '',
    ];
    const out = fileURLToPath(new URL('../../results/synced.md', import.meta.url));
    writeFileSync(out, md.join('\n'));
    log(`wrote ${out}`);
  } finally {
    admin.disconnect();
    await redis.stop();
  }
}

await main();
