import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, type RedisProcess, spawnUntil, startRedis } from './redis-server.js';

const run = promisify(execFile);

/** One primary, one replica and three sentinels on loopback, all owned by the test. */
export interface SentinelSet {
  /** The master name the sentinels monitor. */
  readonly name: string;
  readonly primary: RedisProcess;
  readonly replica: RedisProcess;
  /** Sentinel ports, for ioredis `sentinels: [{ host: '127.0.0.1', port }]`. */
  readonly sentinelPorts: readonly number[];
  /** The port the sentinels currently report as primary. */
  primaryPort(): Promise<number>;
  /** Stops every process and removes their directories. */
  stop(): Promise<void>;
}

export interface SentinelOptions {
  /** ms without an answer before a sentinel calls the primary down. @default 1000 */
  downAfter?: number;
  /** ms. @default 3000 */
  failoverTimeout?: number;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args]);
  return stdout;
}

async function poll(what: string, condition: () => Promise<boolean>, within = 20_000): Promise<void> {
  const deadline = Date.now() + within;
  for (;;) {
    try {
      if (await condition()) return;
    } catch {
      // Not up yet.
    }
    if (Date.now() > deadline) throw new Error(`sentinel set: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function launchSentinel(config: string): Promise<ChildProcess> {
  // `redis-server <conf> --sentinel` is what the redis-sentinel binary runs (it may not be installed).
  return spawnUntil([config, '--sentinel'], '+monitor master', 'redis-sentinel');
}

/**
 * Starts a primary, a replica of it and three sentinels (quorum 2), and waits until the replica is
 * in sync and every sentinel knows the replica and the two other sentinels, so that a failover can
 * start as soon as the primary is down.
 */
export async function startSentinelSet(options: SentinelOptions = {}): Promise<SentinelSet> {
  const name = 'sluice-primary';
  const primary = await startRedis();
  const replica = await startRedis();
  const sentinels: ChildProcess[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'sluice-sentinel-'));
  const sentinelPorts: number[] = [];
  const stop = async () => {
    await Promise.all(
      sentinels.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    await Promise.all([primary.stop(), replica.stop()]);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await cli(replica.port, 'replicaof', '127.0.0.1', String(primary.port));
    await poll('the replica to sync', async () =>
      (await cli(replica.port, 'info', 'replication')).includes('master_link_status:up'),
    );
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const config = join(dir, `sentinel-${port}.conf`);
      await writeFile(
        config,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          'protected-mode no',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${name} ${options.downAfter ?? 1000}`,
          `sentinel failover-timeout ${name} ${options.failoverTimeout ?? 3000}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      sentinels.push(await launchSentinel(config));
      sentinelPorts.push(port);
    }
    for (const port of sentinelPorts) {
      await poll(`sentinel ${port} to know the replica and the other sentinels`, async () => {
        const known = await cli(port, 'sentinel', 'master', name);
        const field = (key: string) => {
          const lines = known.split('\n');
          return Number(lines[lines.indexOf(key) + 1]);
        };
        return field('num-slaves') === 1 && field('num-other-sentinels') === 2;
      });
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    name,
    primary,
    replica,
    sentinelPorts,
    async primaryPort() {
      const answer = await cli(sentinelPorts[0]!, 'sentinel', 'get-master-addr-by-name', name);
      return Number(answer.trim().split('\n')[1]);
    },
    stop,
  };
}
