import { readdir, readFile, readlink, rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../setup/redis-server.js';
import { type ServerProcess, spawnServer, tempDir, until } from './harness.js';
import { configDir, d, publishedClient, type RlsClient } from './rls-harness.js';

// `--workers 2 --grpc-port P`: every worker serves the rate limit service on P (node:cluster shares
// the port of @grpc/grpc-js's http2 server as it shares the RESP port), the decisions stay exact
// across them (one LMDB), and SIGHUP to the primary reloads the config in each worker.

const WORKERS = 2;
const CONFIG = {
  'app.yaml':
    'domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: year, requests_per_unit: 50 }\n',
};
// Two server processes with their workers: a loaded machine takes longer than the default waits.
const WAIT = 60_000;

/** The socket inodes of the TCP connections accepted on `port` (Linux's /proc/net). */
async function acceptedOn(port: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = Number.parseInt(cols[1]!.split(':')[1]!, 16);
      // 01: ESTABLISHED.
      if (local === port && cols[3] === '01') inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/** How many of `inodes` the process `pid` holds open. */
async function held(pid: number, inodes: Set<string>): Promise<number> {
  let n = 0;
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined && inodes.has(inode)) n++;
  }
  return n;
}

describe.skipIf(process.platform !== 'linux')(`sluice-server --workers ${WORKERS} --grpc-port`, () => {
  let data: string;
  let config: string;
  let grpcPort: number;
  let server: ServerProcess;
  const clients: RlsClient[] = [];

  beforeAll(async () => {
    data = await tempDir();
    config = await configDir(CONFIG);
    grpcPort = await freePort();
    server = await spawnServer(data, undefined, [
      '--workers',
      String(WORKERS),
      '--grpc-port',
      String(grpcPort),
      '--rls-config',
      config,
    ]);
  }, WAIT);
  afterAll(async () => {
    for (const c of clients) c.close();
    await server?.kill('SIGTERM');
    await rm(data, { recursive: true, force: true });
    await rm(config, { recursive: true, force: true });
  });

  const workerEvents = (event: string) =>
    server
      .events()
      .filter((e) => e.event === event)
      .map((e) => e.fields.worker as number);

  it('every worker listens on the gRPC port, and the primary names it', async () => {
    await until(() => new Set(workerEvents('rls-listening')).size === WORKERS, 'rls-listening', WAIT);
    expect([...new Set(workerEvents('rls-listening'))].sort()).toEqual([0, 1]);
    const listening = server.events().find((e) => e.event === 'listening')!;
    expect(listening.fields).toMatchObject({ workers: WORKERS, grpcPort });
  });

  it('connections are spread over the workers, and their decisions are exact together', async () => {
    // Each client its own connection (grpc-js shares one between clients of a target by default).
    for (let i = 0; i < 8; i++)
      clients.push(publishedClient(grpcPort, { 'grpc.use_local_subchannel_pool': 1 }));
    for (const c of clients) expect((await c.should('app', [d('user', 'warm-up')])).overall_code).toBe('OK');
    const pids = server
      .events()
      .filter((e) => e.event === 'worker-started')
      .map((e) => e.fields.pid as number);
    expect(pids).toHaveLength(WORKERS);
    const inodes = await acceptedOn(grpcPort);
    const perWorker = await Promise.all(pids.map((pid) => held(pid, inodes)));
    // Round robin: 8 connections, each worker holds some (4 each when nothing else connected).
    expect(perWorker.reduce((a, b) => a + b, 0)).toBe(8);
    for (const n of perWorker) expect(n).toBeGreaterThan(0);

    const answers = await Promise.all(
      Array.from({ length: 120 }, (_, i) => clients[i % clients.length]!.should('app', [d('user', 'crowd')])),
    );
    expect(answers.filter((r) => r.overall_code === 'OK')).toHaveLength(50);
  });

  it('SIGHUP to the primary reloads the config in every worker', async () => {
    expect(workerEvents('config-reloaded')).toEqual([]);
    process.kill(server.child.pid!, 'SIGHUP');
    await until(() => new Set(workerEvents('config-reloaded')).size === WORKERS, 'config-reloaded', WAIT);
    expect([...new Set(workerEvents('config-reloaded'))].sort()).toEqual([0, 1]);
    // The primary is still there, and so are its workers.
    expect(server.child.exitCode).toBeNull();
    expect(workerEvents('worker-exit')).toEqual([]);
  });
});
