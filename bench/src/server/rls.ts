/**
 * Envoy's rate limit service on sluice-server: ShouldRateLimit per second and its p50/p99, on the
 * server's LMDB and on Redis, against the RESP path of the same server (SL.CHECK of the same fixed
 * window), in one run. Each side is a fresh `sluice-server` process (tsx on the sources) pinned to
 * the subject core with taskset when there is one; this process is the load generator (N callers,
 * each awaiting its answer before the next call, on one gRPC channel or one RESP connection each),
 * on the generator core. Traffic: returning clients over `--keys` descriptor values, one
 * descriptor per call, a limit no client reaches (every call is a full decision and a write).
 *
 *   node --import tsx bench/src/server/rls.ts [--rounds 3] [--requests 20000] [--callers 50] [--keys 10000]
 *   node --import tsx bench/src/server/rls.ts --smoke        # a few hundred calls: it runs, nothing to read
 *   node --import tsx bench/src/server/rls.ts --generator h2load [--requests 50000]
 *
 * `--generator h2load` measures the server rather than a Node client: h2load (nghttp2, C) sends
 * ShouldRateLimit frames and redis-benchmark sends SL.CHECK, each pinned to the generator core, on
 * one hot descriptor (h2load sends one body; the Node generator spreads over `--keys`); the
 * figures are calls per second and the server's CPU per call from /proc (a pass without h2load's
 * per-call log), and p50/p99 latency (a second pass with it; redis-benchmark's own). It also
 * measures the floor, `node:http2` answering the same exchange with no service (h2-floor.ts), in
 * each round beside the service: the service's share of the floor's rate moves less with the
 * machine's noise than the rates do. The Node generator's own gRPC client costs about what the
 * server does per call, so on 2 cores it measures the client as much as the server.
 *
 * Prints `uptime` before and after: read the figures against the machine's load.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { credentials, loadPackageDefinition, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Redis } from 'ioredis';
import { protoDir } from '../../../packages/server/src/rls/proto.js';
import { benchCores, cpuTicks, pin, stealShare, uptime } from '../lib/pinning.js';
import { redisBenchmarkFigures } from '../lib/redis-benchmark.js';
import { freePort, startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '20000' },
    callers: { type: 'string', default: '50' },
    keys: { type: 'string', default: '10000' },
    smoke: { type: 'boolean', default: false },
    generator: { type: 'string', default: 'node' },
  },
});
const external = values.generator === 'h2load';
const smoke = values.smoke === true;
const rounds = smoke ? 1 : Number(values.rounds);
const requests = smoke ? 300 : Number(values.requests);
const callers = smoke ? 4 : Number(values.callers);
const keys = Number(values.keys);
const cores = benchCores();
if (cores !== undefined) pin(process.pid, cores.generator);

const CLI = new URL('../../../packages/server/src/cli.ts', import.meta.url).pathname;
const ROOT = new URL('../../../', import.meta.url).pathname;
const CONFIG = `domain: bench
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 1000000000 }
`;

interface Server {
  readonly resp: number;
  readonly grpc: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Node on `args` (cwd the repository), ready when its stderr has said `ready`, pinned to the
 * subject core; `stop` sends SIGTERM, waits for the exit, then runs `cleanup`.
 */
async function startProcess(
  name: string,
  args: string[],
  ready: string,
  ports: { resp: number; grpc: number },
  cleanup: () => void = () => {},
): Promise<Server> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (err.includes(ready)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}): ${err}`)));
  });
  if (cores !== undefined) pin(child.pid!, cores.subject);
  return {
    ...ports,
    child,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      cleanup();
    },
  };
}

async function startServer(redisUrl: string | undefined): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-rls-bench-'));
  const config = join(dir, 'config');
  mkdirSync(config);
  writeFileSync(join(config, 'bench.yaml'), CONFIG);
  const [resp, grpc] = [await freePort(), await freePort()];
  const args = ['--import', 'tsx', CLI, '--data', join(dir, 'data'), '--port', String(resp)];
  args.push('--grpc-port', String(grpc), '--rls-config', config);
  if (redisUrl !== undefined) args.push('--rls-redis', redisUrl);
  return startProcess('sluice-server', args, '"event":"rls-listening"', { resp, grpc }, () =>
    rmSync(dir, { recursive: true, force: true }),
  );
}

const FLOOR = new URL('./h2-floor.ts', import.meta.url).pathname;

/** The floor (h2-floor.ts): node:http2 answering the same exchange with no service behind it. */
async function startFloor(): Promise<Server> {
  const grpc = await freePort();
  return startProcess('h2-floor', ['--import', 'tsx', FLOOR, String(grpc)], 'listening', { resp: 0, grpc });
}

const Service = loadPackageDefinition(
  loadSync('envoy/service/ratelimit/v3/rls.proto', {
    keepCase: true,
    longs: Number,
    includeDirs: [protoDir()],
  }),
) as unknown as { envoy: { service: { ratelimit: { v3: { RateLimitService: ServiceClientConstructor } } } } };

type Call = (key: number) => Promise<unknown>;

/** `requests` calls from `callers` loops, each awaiting its answer: calls per second and latencies (ms). */
async function drive(call: Call): Promise<{ rate: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < requests) {
        const key = (next++ * 7919) % keys;
        const t = performance.now();
        await call(key);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { rate: requests / seconds, p50: at(0.5), p99: at(0.99) };
}

function grpcCalls(port: number): { call: Call; close: () => void } {
  const clients = Array.from(
    { length: callers },
    () =>
      new Service.envoy.service.ratelimit.v3.RateLimitService(
        `127.0.0.1:${port}`,
        credentials.createInsecure(),
        {
          'grpc.use_local_subchannel_pool': 1,
        },
      ),
  );
  let i = 0;
  return {
    call: (key) =>
      new Promise((resolve, reject) => {
        const client = clients[i++ % clients.length] as unknown as {
          ShouldRateLimit(req: unknown, cb: (e: Error | null, r: unknown) => void): void;
        };
        client.ShouldRateLimit(
          { domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: `c${key}` }] }] },
          (e, r) => (e === null ? resolve(r) : reject(e)),
        );
      }),
    close: () => {
      for (const c of clients) c.close();
    },
  };
}

async function respCalls(port: number): Promise<{ call: Call; close: () => void }> {
  const clients = Array.from({ length: callers }, () => new Redis({ port, host: '127.0.0.1' }));
  let i = 0;
  return {
    call: (key) =>
      clients[i++ % clients.length]!.call(
        'SL.CHECK',
        'COMPACT',
        'LIMIT',
        'fixed-window:limit=1000000000,window=3600000',
        `c${key}`,
      ),
    close: () => {
      for (const c of clients) c.disconnect();
    },
  };
}

/** The server process's CPU time so far, µs (/proc: utime + stime, 100 ticks a second). */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** One gRPC frame of ShouldRateLimit on the hot descriptor `client=c1`, encoded by the published proto. */
function requestFrame(): Buffer {
  const method = (
    Service.envoy.service.ratelimit.v3.RateLimitService as unknown as {
      service: { ShouldRateLimit: { requestSerialize(value: unknown): Buffer } };
    }
  ).service.ShouldRateLimit;
  const message = method.requestSerialize({
    domain: 'bench',
    descriptors: [{ entries: [{ key: 'client', value: 'c1' }] }],
  });
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

interface ExternalRun {
  rate: number;
  /** ms: the median call (h2load: from its per-call log, NaN without one; redis-benchmark: its own p50). */
  p50: number;
  /** ms: the 99th percentile call, from the same. */
  p99: number;
  /** Server CPU µs per call. */
  cpu: number;
}

/**
 * h2load against the gRPC port: 10 connections × 4 streams, `requests` calls, every one answered
 * 200. h2load prints no percentiles; with `latencyLog` its per-call log (start µs, status, µs to
 * the response's end) gives p50/p99, at the cost of a write per call on the generator's core: the
 * rate and the server's CPU come from a pass without it, so the log cannot slow the generator in
 * the figures that measure the server, and the percentiles from a second pass with it.
 */
function h2load(server: Server, body: string, latencyLog: boolean): ExternalRun {
  const pid = server.child.pid!;
  const log = join(dirname(body), 'h2load.log');
  rmSync(log, { force: true }); // h2load appends to it
  const before = cpuUs(pid);
  const out = execFileSync(
    'taskset',
    [
      ...['-c', cores?.generator ?? '0', 'h2load', '-n', String(requests), '-c', '10', '-m', '4', '-d', body],
      ...(latencyLog ? [`--log-file=${log}`] : []),
      ...['-H', 'content-type: application/grpc', '-H', 'te: trailers'],
      `http://127.0.0.1:${server.grpc}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`,
    ],
    { encoding: 'utf8' },
  );
  const cpu = (cpuUs(pid) - before) / requests;
  const done = /(\d+) succeeded/.exec(out);
  if (done === null || Number(done[1]) !== requests || !out.includes(`${requests} 2xx`)) {
    throw new Error(`h2load: not every call succeeded:\n${out}`);
  }
  const rate = Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out)![1]);
  if (!latencyLog) {
    return { rate, p50: Number.NaN, p99: Number.NaN, cpu };
  }
  const times = readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => Number(line.split('\t')[2]) / 1000)
    .sort((a, b) => a - b);
  if (times.length !== requests)
    throw new Error(`h2load: ${times.length} calls in its log, ${requests} sent`);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { rate, p50: at(0.5), p99: at(0.99), cpu };
}

/** redis-benchmark against the RESP port: SL.CHECK of the same fixed window on the hot key, 50 clients. */
function redisBenchmark(server: Server): ExternalRun {
  const pid = server.child.pid!;
  const before = cpuUs(pid);
  const out = execFileSync(
    'taskset',
    [
      ...['-c', cores?.generator ?? '0', 'redis-benchmark', '-p', String(server.resp), '-c', '50'],
      ...['-n', String(requests), '--csv', 'SL.CHECK', 'COMPACT', 'LIMIT'],
      ...['fixed-window:limit=1000000000,window=3600000', 'c1'],
    ],
    { encoding: 'utf8' },
  );
  const cpu = (cpuUs(pid) - before) / requests;
  const { rps, p50, p99 } = redisBenchmarkFigures(out);
  return { rate: rps, p50, p99, cpu };
}

/** `--generator h2load`: the server's capacity, generator and server each on its core. */
async function mainExternal(): Promise<void> {
  const ticks = cpuTicks();
  console.log(`before: ${uptime()}`);
  console.log(
    `pinning: ${cores === undefined ? 'none' : `generator ${cores.generator}, servers ${cores.subject}`}; h2load / redis-benchmark, ${requests} calls per pass, one hot descriptor`,
  );
  const redis = await startRedis(cores?.subject);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-rls-h2load-'));
  const body = join(dir, 'request.bin');
  writeFileSync(body, requestFrame());
  const names = ['RLS on LMDB', 'RLS on Redis', 'RESP SL.CHECK (LMDB)', 'node:http2 floor'];
  const FLOOR_ROW = 3;
  const runs: ExternalRun[][] = names.map(() => []);
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [i] of names.entries()) {
        const server =
          i === FLOOR_ROW
            ? await startFloor()
            : await startServer(i === 1 ? `redis://127.0.0.1:${redis.port}` : undefined);
        try {
          const pass = (log: boolean) => (i === 2 ? redisBenchmark(server) : h2load(server, body, log));
          pass(false); // warm-up (JIT, connections, the key created)
          const run = pass(false);
          if (i !== 2) {
            const timed = pass(true);
            run.p50 = timed.p50;
            run.p99 = timed.p99;
          }
          runs[i]!.push(run);
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const resp = median(runs[2]!.map((r) => r.rate));
  for (const [i, name] of names.entries()) {
    const of = (pick: (r: ExternalRun) => number) => median(runs[i]!.map(pick));
    const rates = runs[i]!.map((r) => formatRate(r.rate)).join(', ');
    const latency = `p50 ${of((r) => r.p50).toFixed(2)} ms  p99 ${of((r) => r.p99).toFixed(2)} ms${i === 2 ? '' : ' (a logged pass)'}`;
    console.log(
      `${name.padEnd(22)} ${formatRate(of((r) => r.rate))}/s [${rates}]  ${latency}  server ${of((r) => r.cpu).toFixed(0)} µs CPU per call  ×RESP ${formatRatio(of((r) => r.rate) / resp)}`,
    );
  }
  // Each RLS round against the floor's round beside it: the share of bare node:http2's rate the
  // service keeps, and the CPU it adds to a call.
  for (const i of [0, 1]) {
    const ratios = runs[i]!.map((r, round) => r.rate / runs[FLOOR_ROW]![round]!.rate);
    const added = runs[i]!.map((r, round) => r.cpu - runs[FLOOR_ROW]![round]!.cpu);
    console.log(
      `${names[i]!.padEnd(22)} ÷ node:http2 floor ${formatRatio(median(ratios))} [${ratios.map(formatRatio).join(', ')}]  service adds ${median(added).toFixed(0)} µs CPU per call`,
    );
  }
  console.log(`after: ${uptime()}; CPU steal during the run: ${stealShare(ticks, cpuTicks())}`);
}

interface Row {
  name: string;
  rates: number[];
  p50: number[];
  p99: number[];
}

async function main(): Promise<void> {
  console.log(`before: ${uptime()}`);
  console.log(
    `pinning: ${cores === undefined ? 'none' : `generator ${cores.generator}, servers ${cores.subject}`}`,
  );
  const redis = await startRedis(cores?.subject);
  const rows: Row[] = ['RLS on LMDB', 'RLS on Redis', 'RESP SL.CHECK (LMDB)'].map((name) => ({
    name,
    rates: [],
    p50: [],
    p99: [],
  }));
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [i, row] of rows.entries()) {
        const server = await startServer(i === 1 ? `redis://127.0.0.1:${redis.port}` : undefined);
        const side = i === 2 ? await respCalls(server.resp) : grpcCalls(server.grpc);
        try {
          await drive(side.call); // warm-up pass (JIT, connections, keys created)
          const r = await drive(side.call);
          row.rates.push(r.rate);
          row.p50.push(r.p50);
          row.p99.push(r.p99);
        } finally {
          side.close();
          await server.stop();
        }
      }
    }
  } finally {
    await redis.stop();
  }
  if (smoke) {
    console.log(`smoke: ${rows.map((r) => `${r.name} ran ${r.rates.length} round(s)`).join('; ')}`);
  } else {
    const resp = median(rows[2]!.rates);
    for (const row of rows) {
      const rate = median(row.rates);
      console.log(
        `${row.name.padEnd(22)} ${formatRate(rate)}/s  p50 ${median(row.p50).toFixed(2)} ms  p99 ${median(row.p99).toFixed(2)} ms  ×RESP ${formatRatio(rate / resp)}`,
      );
    }
  }
  console.log(`after: ${uptime()}`);
}

await (external ? mainExternal() : main());
