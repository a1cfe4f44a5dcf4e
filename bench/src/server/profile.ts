/**
 * Where sluice-server's time goes: runs the built server (packages/server/dist/cli.js) under
 * `node --cpu-prof`, drives it with redis-benchmark (RL.PREDUCE on 10,000 random keys, 50 clients),
 * stops it, and prints the shares of the server thread's samples by part of the server (and the
 * heaviest functions by self time). Shares only: a profiled server is slower, and the figures
 * that compare speed come from compare.ts on a quiet machine.
 *
 *   pnpm --filter @sluice/core build && pnpm --filter @sluice/redis build && pnpm --filter @sluice/server build
 *   node --import tsx bench/src/server/profile.ts [--pipeline 16] [--requests 300000] [--workers 1]
 *
 * The .cpuprofile files stay in $TMPDIR/sluice-server-profiles/ (Chrome DevTools opens them).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

const { values } = parseArgs({
  options: {
    pipeline: { type: 'string', default: '16' },
    requests: { type: 'string', default: '300000' },
    workers: { type: 'string', default: '1' },
  },
});
const cli = new URL('../../../packages/server/dist/cli.js', import.meta.url).pathname;
const profiles = join(tmpdir(), 'sluice-server-profiles');
mkdirSync(profiles, { recursive: true });
const before = new Set(readdirSync(profiles));
const data = mkdtempSync(join(tmpdir(), 'sluice-profile-'));
const port = 19_900 + Math.floor(Math.random() * 90);

const server = spawn(
  process.execPath,
  [
    '--cpu-prof',
    `--cpu-prof-dir=${profiles}`,
    cli,
    '--port',
    String(port),
    '--data',
    data,
    '--workers',
    values.workers!,
  ],
  { stdio: 'ignore' },
);
try {
  for (let tries = 0; ; tries++) {
    await new Promise((r) => setTimeout(r, 200));
    try {
      execFileSync('redis-cli', ['-p', String(port), 'PING'], { stdio: 'ignore' });
      break;
    } catch (err) {
      if (tries > 150) throw err;
    }
  }
  execFileSync(
    'redis-benchmark',
    [
      ...[
        '-p',
        String(port),
        '-c',
        '50',
        '-P',
        values.pipeline!,
        '-n',
        values.requests!,
        '-r',
        '10000',
        '-q',
      ],
      ...['RL.PREDUCE', 'key:__rand_int__', '100', '60000'],
    ],
    { stdio: 'ignore' },
  );
} finally {
  await new Promise((resolve) => {
    server.once('exit', resolve);
    server.kill('SIGTERM');
  });
  rmSync(data, { recursive: true, force: true });
}

/** The part of the server a sample belongs to, from the function and its file. */
function part(node: ProfileNode): string {
  const { functionName: name, url } = node.callFrame;
  if (name === '(idle)') return 'idle (waiting for the clients)';
  if (name === '(garbage collector)') return 'GC';
  if (name === '(program)') return 'V8 / native, outside JS';
  if (url.includes('/lmdb/') || url.includes('msgpackr')) return 'LMDB (lmdb-js, msgpack, the native calls)';
  if (
    name === 'writeGeneric' ||
    name === 'writevGeneric' ||
    name === 'writeUtf8String' ||
    name.startsWith('_write') ||
    url.includes('stream_base_commons') ||
    url.includes('internal/streams/writable')
  )
    return 'socket writes (stream, syscall)';
  if (name === 'onStreamRead' || url.includes('internal/streams/readable') || name === 'readableAddChunk')
    return 'socket reads (stream machinery)';
  if (url.includes('packages/core') || url.includes('@sluice/core')) return 'core (the algorithm)';
  if (url.includes('server/dist') || url.includes('packages/server')) {
    return 'server (parser, connection, commands, transaction)';
  }
  if (url.startsWith('node:') || url === '') return 'Node internals (timers, events, buffers)';
  return 'other';
}

// With --workers, the primary and every worker leave one: the busiest worker's is read.
const written = readdirSync(profiles)
  .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
  .map((f) => ({ f, profile: JSON.parse(readFileSync(join(profiles, f), 'utf8')) as CpuProfile }));
const busiest = written.sort((a, b) => b.profile.samples.length - a.profile.samples.length)[0];
if (busiest === undefined) throw new Error('no profile written');
const { f: file, profile } = busiest;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parts = new Map<string, number>();
const functions = new Map<string, number>();
for (const id of profile.samples) {
  const node = byId.get(id)!;
  parts.set(part(node), (parts.get(part(node)) ?? 0) + 1);
  const where = `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`;
  functions.set(where, (functions.get(where) ?? 0) + 1);
}
const total = profile.samples.length;
const pct = (n: number) => `${((100 * n) / total).toFixed(1)}%`;
console.log(
  `sluice-server under redis-benchmark RL.PREDUCE, pipeline ${values.pipeline}, ${values.workers} worker(s): ${join(profiles, file)}\n`,
);
console.log('| part | share of samples |\n|---|---|');
for (const [name, n] of [...parts].sort((a, b) => b[1] - a[1])) console.log(`| ${name} | ${pct(n)} |`);
console.log('\nheaviest functions (self time):');
for (const [name, n] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 25))
  console.log(`  ${pct(n)}  ${name}`);
