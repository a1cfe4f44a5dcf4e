/**
 * The host store against what users run today to share a limit between the processes of one
 * machine, side by side in one run: decisions per second per worker for sluice's HostStore,
 * MemoryStore (each worker its own limit: the speed of no sharing), RedisStore on a localhost
 * redis-server, express-rate-limit's cluster-memory-store and rate-limiter-flexible's
 * RateLimiterCluster (both IPC to the node:cluster primary), each with 4 worker processes × 64
 * concurrent callers; and, first, how many of 4 × 64 × rounds checks on one key each admits against
 * its limit (over-admission). Method:
 * - every subject in a fresh cluster (cluster-run.ts) per round, rounds interleaved with the order
 *   rotated; the median over rounds, and the median of each round's ratio of HostStore to it;
 * - pinned with taskset when there are cores to: redis-server on `--server-cores`, the cluster
 *   (primary and workers: the generator) on `--worker-cores`, the same cores for every subject;
 * - CPU per decision: every process of the run (workers, primary, and redis-server for RedisStore),
 *   which a loaded machine moves less than decisions per second;
 * - `uptime` printed before and after: read the figures against the machine's load.
 * Runs against the built packages: `pnpm build` first.
 *
 *   pnpm build && pnpm --filter @sluice/bench run bench:host [--rounds 5] [--duration 5000] [--warmup 1000]
 *     [--workers 4] [--clients 64] [--one-key-rounds 4] [--limit 100] [--keys 10000]
 *     [--server-cores N] [--worker-cores A-B] [--only host,redis,...]
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { machine, staleBuilds } from '../lib/machine.js';
import { startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';
import type { RunConfig, RunResult } from './cluster-run.js';
import { SUBJECTS } from './subjects.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5000' },
    warmup: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '4' },
    clients: { type: 'string', default: '64' },
    'one-key-rounds': { type: 'string', default: '4' },
    limit: { type: 'string', default: '100' },
    keys: { type: 'string', default: '10000' },
    'server-cores': { type: 'string' },
    'worker-cores': { type: 'string' },
    only: { type: 'string' },
  },
});
const num = (name: keyof typeof values) => Number(values[name]);
const RUN = fileURLToPath(new URL('./cluster-run.ts', import.meta.url));
const RESULTS = fileURLToPath(new URL('../../results/host-latest.md', import.meta.url));

const cores = availableParallelism();
const haveTaskset = spawnSync('taskset', ['-V']).status === 0;
// By default redis-server gets the last core and the cluster the others (with fewer than 3 cores
// nothing is pinned: the generator would have one core for 4 workers and a primary).
const pin = haveTaskset && (cores >= 3 || values['server-cores'] !== undefined);
const serverCores = values['server-cores'] ?? String(cores - 1);
const workerCores = values['worker-cores'] ?? `0-${cores - 2}`;
const subjects = SUBJECTS.filter((s) => values.only === undefined || values.only.split(',').includes(s.id));

const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const log = (line: string) => process.stderr.write(`${line}\n`);

/** CPU µs a process has used (user + system), from /proc. */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
  return (Number(fields[11]) + Number(fields[12])) * tick;
}

/** One fresh cluster run of one subject, pinned to the worker cores. */
function runOnce(config: RunConfig): Promise<RunResult> {
  const node = [process.execPath, '--import', 'tsx', RUN, JSON.stringify(config)];
  const [command, ...args] = pin ? ['taskset', '-c', workerCores, ...node] : node;
  return new Promise((resolve, reject) => {
    const child = spawn(command!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    // What a subject prints (cluster-memory-store warns on each full IPC channel): counted, its
    // first line shown, not thousands of lines.
    child.stderr.on('data', (chunk) => {
      if (err.length < 1_000_000) err += chunk;
    });
    child.on('exit', (code) => {
      const lines = err.split('\n').filter((line) => line.trim() !== '');
      if (lines.length > 0)
        log(`${config.subject} printed ${lines.length} lines on stderr, the first: ${lines[0]}`);
      if (code !== 0)
        reject(new Error(`${config.subject}: the run exited with ${code}:\n${lines.slice(-20).join('\n')}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1)!) as RunResult);
    });
  });
}

interface Round {
  admitted: number;
  perWorker: number;
  total: number;
  cpuUsPerDecision: number;
  failures: number;
}

log(`uptime before: ${uptime()}`);
const m = machine();
const stale = await staleBuilds(['core', 'host', 'redis']);
if (stale.length > 0) log(`warning: built packages older than their sources: ${stale.join(', ')}`);
const redis = await startRedis(pin ? serverCores : undefined);
const rounds = new Map<string, Round[]>(subjects.map((s) => [s.id, []]));
try {
  for (let r = 0; r < num('rounds'); r++) {
    const order = subjects.map((_, i) => subjects[(i + r) % subjects.length]!);
    for (const subject of order) {
      const hostPath = mkdtempSync(join(tmpdir(), 'sluice-bench-host-'));
      const redisBefore = processCpuUs(redis.pid);
      try {
        const result = await runOnce({
          subject: subject.id,
          workers: num('workers'),
          clients: num('clients'),
          rounds: num('one-key-rounds'),
          limit: num('limit'),
          keys: num('keys'),
          warmup: num('warmup'),
          duration: num('duration'),
          hostPath,
          redisPort: redis.port,
          run: `bench:${process.pid}:${r}:${subject.id}`,
        });
        const decisions = result.workers.reduce((sum, w) => sum + w.decisions, 0);
        const rates = result.workers.map((w) => w.decisions / (w.ms / 1000));
        // redis-server's CPU over the whole run (both phases): charged to RedisStore's decisions only.
        const redisCpu = subject.id === 'redis' ? processCpuUs(redis.pid) - redisBefore : 0;
        const cpu = result.workers.reduce((sum, w) => sum + w.cpuUs, 0) + result.primaryCpuUs + redisCpu;
        rounds.get(subject.id)!.push({
          admitted: result.admitted,
          perWorker: rates.reduce((a, b) => a + b, 0) / rates.length,
          total: rates.reduce((a, b) => a + b, 0),
          cpuUsPerDecision: cpu / decisions,
          failures: result.oneKeyFailures + result.workers.reduce((sum, w) => sum + w.failures, 0),
        });
        log(
          `round ${r + 1}: ${subject.id} ${formatRate(rates.reduce((a, b) => a + b, 0) / rates.length)}/s per worker`,
        );
      } finally {
        rmSync(hostPath, { recursive: true, force: true });
      }
    }
  }
} finally {
  await redis.stop();
}

const hostRounds = rounds.get('host');
const limit = num('limit');
const checks = num('workers') * num('clients') * num('one-key-rounds');
const lines = [
  `# HostStore against the ways to share a limit between the processes of one host`,
  '',
  `${m.date.slice(0, 10)}, ${m.cpu}, ${m.cores} cores, Node ${m.node}; ${num('workers')} workers × ${num('clients')} concurrent callers; ${num('rounds')} rounds of ${num('duration')} ms (after ${num('warmup')} ms of warm-up), medians; ${pin ? `redis-server pinned to cores ${serverCores}, the cluster to ${workerCores}` : 'not pinned (taskset missing, or fewer than 3 cores)'}.${stale.length > 0 ? ` **The build was older than the sources of ${stale.join(', ')}.**` : ''}`,
  '',
  `| subject | one key: admitted of ${limit} (${checks} checks) | decisions/s per worker | all workers | CPU µs per decision | HostStore is |`,
  '| --- | ---: | ---: | ---: | ---: | ---: |',
];
for (const subject of subjects) {
  const list = rounds.get(subject.id)!;
  const admitted = median(list.map((x) => x.admitted));
  const ratio =
    hostRounds === undefined || subject.id === 'host'
      ? undefined
      : median(list.map((x, i) => hostRounds[i]!.perWorker / x.perWorker));
  const failures = list.reduce((sum, x) => sum + x.failures, 0);
  lines.push(
    `| ${subject.label}${failures > 0 ? ` (**${failures} calls answered by its failure policy: invalid**)` : ''} | ${admitted}${admitted > limit ? ` (**+${admitted - limit}**)` : ''} | ${formatRate(median(list.map((x) => x.perWorker)))} | ${formatRate(median(list.map((x) => x.total)))} | ${median(list.map((x) => x.cpuUsPerDecision)).toFixed(1)} | ${ratio === undefined ? '—' : formatRatio(ratio)} |`,
  );
}
lines.push('', 'Configurations:', '');
for (const subject of subjects) lines.push(`- ${subject.label}: \`${subject.config}\``);
if (hostRounds !== undefined) {
  const goal = (id: string, times: number) => {
    const list = rounds.get(id);
    if (list === undefined) return undefined;
    const ratio = median(list.map((x, i) => hostRounds[i]!.perWorker / x.perWorker));
    if (!Number.isFinite(ratio)) return `${id} n/a (no decisions measured)`;
    return `${id} ${formatRatio(ratio)} (goal ≥ ${times}×: ${ratio >= times ? 'met' : 'not met'})`;
  };
  const goals = [goal('erl-cluster', 5), goal('rlf-cluster', 5), goal('redis', 3)].filter(Boolean);
  lines.push('', `Goals, decisions per second per worker, HostStore over: ${goals.join('; ')}.`);
}
const report = lines.join('\n');
process.stdout.write(`${report}\n`);
writeFileSync(RESULTS, `${report}\n`);
log(`uptime after: ${uptime()}`);
log(`written to ${RESULTS}`);
