/**
 * Where an HTTP subject's server spends its time: runs the subject's server under
 * `node --cpu-prof`, loads it with autocannon as the benchmark does, then prints the functions with
 * the most self time and the most inclusive time (sluice's own functions marked), from the
 * `.cpuprofile` it leaves in $TMPDIR/sluice-profiles/ (open it in Chrome DevTools for the tree).
 *
 * usage: pnpm --filter @sluice/bench run bench:profile <subject id> [seconds]
 *        e.g. fastify:sluice:memory, express:sluice:redis, fastify:bare (see subjects.ts)
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { startRedis } from '../lib/redis-server.js';
import { formatRate } from '../lib/stats.js';
import { load } from './load.js';
import { startServer } from './server-process.js';
import { httpSubject, usesRedis } from './subjects.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
    readonly columnNumber: number;
  };
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

const [id, secondsArg] = process.argv.slice(2);
if (id === undefined) {
  process.stderr.write('usage: profile.ts <subject id> [seconds]\n');
  process.exit(2);
}
const subject = httpSubject(id);
const seconds = Number(secondsArg ?? 5);
const dir = `${tmpdir()}/sluice-profiles/`;
await mkdir(dir, { recursive: true });
const before = new Set(await readdir(dir));

const redis = usesRedis(subject) ? await startRedis() : undefined;
try {
  const server = await startServer(id, redis?.port, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  await load(server, 2, undefined, subject.shape);
  const round = await load(server, seconds, undefined, subject.shape);
  await server.stop();
  process.stdout.write(
    `${subject.label}: ${formatRate(round.rps)} req/s, p99 ${round.p99} ms, server CPU ${round.cpuPerRequest.toFixed(0)} µs per request (profiled)\n`,
  );
} finally {
  await redis?.stop();
}

const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile') && !before.has(f));
if (file === undefined) throw new Error(`no new .cpuprofile in ${dir}`);
const profile = JSON.parse(await readFile(dir + file, 'utf8')) as CpuProfile;

const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
// sluice frames are mapped back to their TypeScript sources through the build's source maps.
const maps = new Map<string, SourceMap | undefined>();
const sourceMap = (file: string) => {
  if (!maps.has(file))
    maps.set(
      file,
      existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))) : undefined,
    );
  return maps.get(file);
};
const where = (n: ProfileNode) => {
  const f = n.callFrame;
  const file = f.url.replace(/^file:\/\//, '');
  const name = f.functionName || '(anonymous)';
  // findEntry answers {} when the position has no mapping.
  const original = (
    /packages\/[^/]+\/dist\//.test(file)
      ? sourceMap(file)?.findEntry(f.lineNumber, f.columnNumber)
      : undefined
  ) as { originalSource?: string; originalLine?: number } | undefined;
  if (original?.originalSource !== undefined && original.originalLine !== undefined) {
    const source = resolve(dirname(file), original.originalSource.replace(/^file:\/\//, '')).replace(
      /^.*\/packages\//,
      'packages/',
    );
    return `${name} ${source}:${original.originalLine + 1}`;
  }
  const path = file.replace(/^.*\/(packages|node_modules)\//, '$1/');
  return `${name} ${path}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
};
/** The limiter's own frames: sluice's packages, or (to compare shares) the peer's modules. */
const ours =
  subject.limiter === 'peer'
    ? (w: string) =>
        /node_modules\/(@fastify\/rate-limit|toad-cache|express-rate-limit|rate-limit-redis)\//.test(w)
    : (w: string) => /packages\/(core|express|fastify|redis)\//.test(w);
const whose = subject.limiter === 'peer' ? "the peer's" : "sluice's";
/**
 * Where the framework hands the request on (Express's `next`, Fastify's hook runner): a sample
 * below one of these, even when a sluice frame is further up the stack (middleware calls `next()`
 * synchronously), is the rest of the app's time, not sluice's.
 */
const boundary = (n: ProfileNode) =>
  n.callFrame.functionName === 'next' ||
  /node_modules\/(router\/|fastify\/lib\/(hooks|route|handle-request)\.js)/.test(n.callFrame.url);
const ioredis = (n: ProfileNode) => /node_modules\/(ioredis|redis-parser|@ioredis)\//.test(n.callFrame.url);

const self = new Map<string, number>();
/** Samples in sluice's own work, by sluice function on the stack (each counted once per sample). */
const sluice = new Map<string, number>();
/** The same samples by their leaf: what sluice's time is actually spent on, sluice or not. */
const sluiceLeaves = new Map<string, number>();
let sluiceTotal = 0;
let redisClient = 0;
for (const sample of profile.samples) {
  const leaf = byId.get(sample)!;
  const leafWhere = where(leaf);
  self.set(leafWhere, (self.get(leafWhere) ?? 0) + 1);
  const stack: ProfileNode[] = [];
  for (let n: ProfileNode | undefined = leaf; n !== undefined; n = byId.get(parent.get(n.id) ?? -1))
    stack.push(n);
  if (stack.some(ioredis)) redisClient++;
  const first = stack.findIndex((n) => boundary(n) || ours(where(n)));
  if (first === -1 || boundary(stack[first]!)) continue;
  sluiceTotal++;
  sluiceLeaves.set(leafWhere, (sluiceLeaves.get(leafWhere) ?? 0) + 1);
  const seen = new Set<string>();
  for (const n of stack) {
    const w = where(n);
    if (!ours(w) || seen.has(w)) continue;
    seen.add(w);
    sluice.set(w, (sluice.get(w) ?? 0) + 1);
  }
}
// Shares of the time the process was busy (idle samples left out).
const idle = [...self].filter(([w]) => w.startsWith('(idle)')).reduce((n, [, c]) => n + c, 0);
const total = profile.samples.length - idle;
const share = (n: number) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
const top = (m: Map<string, number>, filter: (w: string) => boolean, count: number) =>
  [...m]
    .filter(([w]) => filter(w))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([w, n]) => `  ${share(n)}  ${w}`)
    .join('\n');
process.stdout.write(
  [
    `profile: ${dir}${file} (${total} busy samples of ${profile.samples.length}; shares of busy time)`,
    `${whose} own work (its frames and what they call, up to the framework's next): ${share(sluiceTotal)}`,
    `anything under ioredis (commands, replies; any caller): ${share(redisClient)}`,
    'self time, all functions:',
    top(self, (w) => !w.startsWith('(idle)'), 25),
    `${whose} own work by its function (inclusive, up to the framework's next; sluice's mapped to packages/*/src):`,
    top(sluice, () => true, 25),
    `${whose} own work by leaf function:`,
    top(sluiceLeaves, () => true, 25),
    '',
  ].join('\n'),
);
