/**
 * System calls per request, sluice-server beside redis-server (issue 23): a measure that does not
 * depend on the machine's load, unlike ops/s. Each server runs the same load as compare.ts's
 * side-by-side rows (redis-benchmark, 50 clients, 10,000 random keys; RL.PREDUCE against
 * redis-server's EVALSHA of the same token bucket with `appendonly yes, appendfsync everysec`)
 * under `strace -c -f` (every thread), after an untraced warm-up run; the counts are divided by
 * the requests. strace slows the servers many times over, so the figures are counts, never time;
 * the per-turn calls (epoll_wait, futex) also depend on how many requests one turn gathers, which
 * the slowdown changes. Needs strace, and ptrace rights over child processes.
 *
 *   pnpm --filter @sluice/core build && pnpm --filter @sluice/host build && pnpm --filter @sluice/server build
 *   node --import tsx bench/src/server/syscalls.ts [--requests 20000] [--pipelines 1,16] [--durability commit|flush]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadBucketScript, redisPeerArgs } from './redis-peer.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    pipelines: { type: 'string', default: '1,16' },
    durability: { type: 'string', default: 'commit' },
  },
});
const cli = new URL('../../../packages/server/dist/cli.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sluice-syscalls-'));
const basePort = 19_900 + Math.floor(Math.random() * 90);

/** The calls shown, in this order, the others summed under "other". */
const SHOWN = ['read', 'write', 'writev', 'epoll_wait', 'futex', 'pwrite64', 'lseek', 'msync', 'fdatasync'];

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

function benchmark(port: number, pipeline: number, requests: string, command: string[]): Promise<void> {
  const args = ['-p', String(port), '-c', '50', '-P', String(pipeline), '-n', requests, '-r', '10000', '-q'];
  const child = spawn('redis-benchmark', [...args, ...command], { stdio: 'ignore' });
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** strace -c's table: calls per system call name (epoll_pwait counted as epoll_wait). */
function parseCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    const name = fields.at(-1)!;
    if (fields.length < 5 || !/^\d/.test(fields[0]!) || name === 'total') continue;
    const key = name === 'epoll_pwait' ? 'epoll_wait' : name;
    counts.set(key, (counts.get(key) ?? 0) + Number(fields[3]));
  }
  return counts;
}

/** Per request, counted on `pid`'s threads while redis-benchmark runs. */
async function traced(
  pid: number,
  port: number,
  pipeline: number,
  command: string[],
): Promise<Map<string, number>> {
  await benchmark(port, pipeline, '20000', command);
  const out = join(dir, `strace-${pid}-${pipeline}`);
  const strace = spawn('strace', ['-c', '-f', '-p', String(pid), '-o', out], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1000));
  await benchmark(port, pipeline, values.requests!, command);
  const exited = new Promise((resolve) => strace.once('exit', resolve));
  strace.kill('SIGINT');
  await exited;
  const perRequest = new Map<string, number>();
  for (const [name, calls] of parseCounts(readFileSync(out, 'utf8'))) {
    perRequest.set(name, calls / Number(values.requests));
  }
  return perRequest;
}

function row(label: string, counts: Map<string, number>): string {
  const shown = SHOWN.map((name) => counts.get(name) ?? 0);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const other = total - shown.reduce((a, b) => a + b, 0);
  return `| ${label} | ${[...shown, other, total].map((n) => n.toFixed(3)).join(' | ')} |`;
}

const sluicePort = basePort;
const redisPort = basePort + 1;
const sluiceArgs = ['--port', String(sluicePort), '--data', join(dir, 'sluice')];
const sluice = await start(
  process.execPath,
  [cli, ...sluiceArgs, '--durability', values.durability!],
  sluicePort,
);
const redis = await start('redis-server', redisPeerArgs(redisPort, dir), redisPort);
try {
  const sha = loadBucketScript(redisPort);
  const ours = ['RL.PREDUCE', 'key:__rand_int__', '100', '60000'];
  const theirs = ['EVALSHA', sha, '1', 'key:__rand_int__', '100', '100', '60000', '1'];
  const rows: string[] = [];
  for (const pipeline of values.pipelines!.split(',').map(Number)) {
    rows.push(
      row(`sluice-server, pipelined ${pipeline}`, await traced(sluice.pid!, sluicePort, pipeline, ours)),
    );
    rows.push(
      row(`redis-server, pipelined ${pipeline}`, await traced(redis.pid!, redisPort, pipeline, theirs)),
    );
  }
  console.log(
    `System calls per request (counts under strace, not time), ${values.requests} requests, 50 clients, 10,000 random keys, sluice-server --durability ${values.durability}\n`,
  );
  console.log(`| server | ${[...SHOWN, 'other', 'total'].join(' | ')} |`);
  console.log(`| --- |${' ---: |'.repeat(SHOWN.length + 2)}`);
  for (const line of rows) console.log(line);
} finally {
  sluice.kill('SIGTERM');
  redis.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  rmSync(dir, { recursive: true, force: true });
}
