import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/** A free loopback port, from the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/**
 * A throwaway `redis-server` on a free loopback port: no persistence. `cpus`: pinned to those cores
 * with taskset (`'3'`, `'2-3'`).
 */
export async function startRedis(
  cpus?: string,
): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const child: ChildProcess =
    cpus === undefined
      ? spawn('redis-server', args, { stdio: 'ignore' })
      : spawn('taskset', ['-c', cpus, 'redis-server', ...args], { stdio: 'ignore' });
  const deadline = Date.now() + 5000;
  for (;;) {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch (error) {
      probe.disconnect();
      if (Date.now() > deadline) {
        child.kill();
        throw error;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    port,
    // taskset execs redis-server: the same process.
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
