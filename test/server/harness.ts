import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type ServerOptions, SluiceServer } from '@sluice/server';
import { Redis, type RedisOptions } from 'ioredis';
import { nodeScript } from '../setup/node-script.js';
import { freePort } from '../setup/redis-server.js';

const run = promisify(execFile);

export interface LoggedEvent {
  readonly event: string;
  readonly fields: Record<string, unknown>;
}

/** A server in this process on a free loopback port and its own data directory. */
export interface TestServer {
  readonly server: SluiceServer;
  readonly port: number;
  readonly dir: string;
  readonly events: LoggedEvent[];
  /** A connected ioredis client (closed by `stop`). */
  client(options?: RedisOptions): Promise<Redis>;
  /** Closes the clients and the server; `keepData` leaves the directory for a restart. */
  stop(keepData?: boolean): Promise<void>;
}

export async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'sluice-server-'));
}

export async function startServer(options: Partial<ServerOptions> = {}, dir?: string): Promise<TestServer> {
  const dataDir = dir ?? (await tempDir());
  const events: LoggedEvent[] = [];
  const server = new SluiceServer({
    port: 0,
    dataDir,
    log: (event, fields) => events.push({ event, fields }),
    ...options,
  });
  const port = await server.listen();
  const clients: Redis[] = [];
  return {
    server,
    port,
    dir: dataDir,
    events,
    async client(clientOptions: RedisOptions = {}) {
      const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, ...clientOptions });
      clients.push(client);
      await client.connect();
      return client;
    },
    async stop(keepData = false) {
      for (const c of clients) c.disconnect();
      await server.close();
      if (!keepData) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** redis-cli as a user runs it: one command per process, its printed output (errors included). */
export async function redisCli(port: number, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args]);
    return stdout.trim();
  } catch (err) {
    // redis-cli exits non-zero on an error reply; its output is still the answer.
    const { stdout } = err as { stdout?: string };
    if (stdout === undefined) throw err;
    return stdout.trim();
  }
}

const CLI = new URL('../../packages/server/src/cli.ts', import.meta.url).pathname;
const ROOT = new URL('../../', import.meta.url).pathname;

/** What a `sluice-server` process that stopped on its own printed, and its exit code. */
export interface ServerExit {
  readonly code: number | null;
  readonly stderr: string;
}

/**
 * Runs `sluice-server` expecting it to refuse to start: resolves with its exit code and stderr
 * once it exits, or rejects when it starts listening instead (then it is stopped).
 */
export async function serverExit(dir: string, extra: readonly string[] = []): Promise<ServerExit> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [await nodeScript(CLI), '--port', String(port), '--data', dir, ...extra],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('"event":"listening"')) {
        child.kill('SIGKILL');
        reject(new Error(`sluice-server started on ${dir}: ${stderr}`));
      }
    });
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

/** `sluice-server` in its own process (its sources bundled: test/setup/node-script.ts), for crash tests. */
export interface ServerProcess {
  readonly port: number;
  readonly child: ChildProcess;
  /** The JSON events it has printed on stderr so far. */
  events(): LoggedEvent[];
  /** The lines of stderr that are not JSON events (a library writing on its own). */
  otherLines(): string[];
  /**
   * Sends `signal` to the server's process group: the process, and with `--workers` its workers
   * too (a SIGKILL then crashes the whole server at once). Resolves once the process has exited.
   */
  kill(signal: NodeJS.Signals): Promise<void>;
}

export async function spawnServer(
  dir: string,
  port?: number,
  extra: readonly string[] = [],
): Promise<ServerProcess> {
  const chosen = port ?? (await freePort());
  // Its own process group, so that a signal reaches the workers of a --workers server too.
  const child = spawn(
    process.execPath,
    [await nodeScript(CLI), '--port', String(chosen), '--data', dir, ...extra],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (stderr.includes('"event":"listening"')) {
        child.stderr?.off('data', onData);
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null) => reject(new Error(`sluice-server exited (${code}): ${stderr}`));
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
  return {
    port: chosen,
    child,
    events: () =>
      stderr
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => {
          const { event, ...fields } = JSON.parse(line) as { event: string };
          return { event, fields };
        }),
    otherLines: () => stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{')),
    kill: (signal) =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        process.kill(-child.pid!, signal);
      }),
  };
}

/** A raw TCP client: sends bytes, collects what comes back until the server closes or `until` matches. */
export function rawClient(port: number): { socket: Socket; received: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  socket.on('data', (chunk) => {
    data += chunk.toString('latin1');
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => data, closed };
}

export async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Clients each sending 30 `RL.PREDUCE crowd 1000 60000 AT 0`, one at a time (many small turns,
 * interleaved): every reply, in no order. Each reply is the tokens before taking one, so an exact
 * server hands out 1000 distinct values, 1 to 1000, then zeros ({@link eachTokenOnce}).
 */
export async function crowdOnOneBucket(clients: readonly Redis[]): Promise<number[]> {
  const replies = await Promise.all(
    clients.map(async (c) => {
      const mine: number[] = [];
      for (let i = 0; i < 30; i++) {
        mine.push((await c.call('RL.PREDUCE', 'crowd', '1000', '60000', 'AT', '0')) as number);
      }
      return mine;
    }),
  );
  return replies.flat();
}

/** What an exact server answers {@link crowdOnOneBucket}: the positive replies, sorted, and the zeros. */
export function eachTokenOnce(replies: readonly number[]): { handedOut: number[]; refused: number } {
  return {
    handedOut: replies.filter((r) => r > 0).sort((a, b) => a - b),
    refused: replies.filter((r) => r === 0).length,
  };
}
