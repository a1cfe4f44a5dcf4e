import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A redis-server process the tests own: on a loopback port, no persistence, its own directory. */
export interface RedisProcess {
  readonly port: number;
  readonly pid: number;
  /** SIGSTOP: the server holds connections but answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** SIGKILL, and wait for the process to be gone. */
  kill(): Promise<void>;
  /** Starts the server again on the same port (after `kill()`), with empty data. */
  restart(): Promise<void>;
  /** Stops the server for good and removes its directory. */
  stop(): Promise<void>;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free loopback port; with `bus`, port + 10000 (the Cluster bus) is free too. */
export async function freePort(bus = false): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await portIsFree(port)) && (!bus || (await portIsFree(port + 10_000)))) return port;
  }
  throw new Error('no free loopback port found');
}

function launch(
  port: number,
  dir: string,
  cluster: boolean,
  extra: readonly string[] = [],
): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
  ];
  if (cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'));
  args.push(...extra);
  return spawnUntil(args, 'Ready to accept connections', `redis-server on ${port}`);
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts a redis-server on a free loopback port (or `port`). */
export async function startRedis(
  options: { port?: number; cluster?: boolean; args?: readonly string[] } = {},
): Promise<RedisProcess> {
  const cluster = options.cluster ?? false;
  const port = options.port ?? (await freePort(cluster));
  const dir = await mkdtemp(join(tmpdir(), `sluice-redis-${port}-`));
  const extra = options.args ?? [];
  let child = await launch(port, dir, cluster, extra);
  return {
    port,
    get pid() {
      return child.pid!;
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
    async restart() {
      child = await launch(port, dir, cluster, extra);
    },
    async stop() {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Three cluster-enabled primaries joined with `redis-cli --cluster create`, and with `replicas: 1`
 * a replica each (nodes 3 to 5, synced before this resolves). `args`: more redis-server options
 * for every node (`--cluster-node-timeout 1500`…).
 */
export async function startCluster(
  options: { replicas?: 0 | 1; args?: readonly string[] } = {},
): Promise<RedisProcess[]> {
  const nodes: RedisProcess[] = [];
  const replicas = options.replicas ?? 0;
  try {
    for (let i = 0; i < 3 * (1 + replicas); i++) {
      nodes.push(await startRedis({ cluster: true, args: options.args ?? [] }));
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    // Wait until every node agrees the cluster is up.
    for (const node of nodes) {
      for (let attempt = 0; ; attempt++) {
        const { stdout } = await run('redis-cli', ['-p', String(node.port), 'cluster', 'info']);
        if (stdout.includes('cluster_state:ok')) break;
        if (attempt > 200) throw new Error(`cluster node ${node.port} never reached cluster_state:ok`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    // Replicas: linked to their primary and synced (a failover needs them).
    for (const node of nodes.slice(3)) {
      for (let attempt = 0; ; attempt++) {
        const { stdout } = await run('redis-cli', ['-p', String(node.port), 'info', 'replication']);
        if (stdout.includes('master_link_status:up')) break;
        if (attempt > 400) throw new Error(`replica ${node.port} never linked to its primary`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    return nodes;
  } catch (error) {
    await Promise.all(nodes.map((node) => node.stop()));
    throw error;
  }
}

/**
 * Starts `redis-server` with `args` and resolves once its output contains `ready` (it rejects when
 * the process exits first or after 10 s, with what it printed).
 */
export function spawnUntil(args: readonly string[], ready: string, label: string): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not start:\n${output}`));
    }, 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(ready)) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with ${code}:\n${output}`));
    });
  });
}
