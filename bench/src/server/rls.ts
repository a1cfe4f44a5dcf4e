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
 *
 * Prints `uptime` before and after: read the figures against the machine's load.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { credentials, loadPackageDefinition, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Redis } from 'ioredis';
import { protoDir } from '../../../packages/server/src/rls/proto.js';
import { benchCores, pin, uptime } from '../lib/pinning.js';
import { freePort, startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '20000' },
    callers: { type: 'string', default: '50' },
    keys: { type: 'string', default: '10000' },
    smoke: { type: 'boolean', default: false },
  },
});
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

async function startServer(redisUrl: string | undefined): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-rls-bench-'));
  const config = join(dir, 'config');
  mkdirSync(config);
  writeFileSync(join(config, 'bench.yaml'), CONFIG);
  const [resp, grpc] = [await freePort(), await freePort()];
  const args = ['--import', 'tsx', CLI, '--data', join(dir, 'data'), '--port', String(resp)];
  args.push('--grpc-port', String(grpc), '--rls-config', config);
  if (redisUrl !== undefined) args.push('--rls-redis', redisUrl);
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (err.includes('"event":"rls-listening"')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`sluice-server exited (${code}): ${err}`)));
  });
  if (cores !== undefined) pin(child.pid!, cores.subject);
  return {
    resp,
    grpc,
    child,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
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

await main();
