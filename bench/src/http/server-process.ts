import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pin } from '../lib/pinning.js';
import type { FromServer } from './server.js';

const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

/** A subject's server, running in its own process. */
export interface ServerProcess {
  readonly port: number;
  readonly pid: number;
  /** CPU time the server process has used so far, µs. */
  cpuMicros(): Promise<number>;
  /** Stops it (normally, so a `--cpu-prof` profile is written) and returns what it counted. */
  stop(): Promise<{ storeErrors: number }>;
}

function next<T extends FromServer['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
): Promise<Extract<FromServer, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`server ${child.pid}: no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (message: FromServer) => {
      if (message.type !== type) return;
      cleanup();
      resolve(message as Extract<FromServer, { type: T }>);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`server ${child.pid} exited (${code}) before '${type}'`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Forks `server.ts <id>` (through tsx) and waits until it listens; pinned to `cpus` when given. */
export async function startServer(
  id: string,
  redisPort: number | undefined,
  nodeFlags: readonly string[] = [],
  cpus?: string,
): Promise<ServerProcess> {
  const child = fork(SERVER, [id, ...(redisPort === undefined ? [] : [`--redis-port=${redisPort}`])], {
    execArgv: [...nodeFlags, '--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  // Before it starts its threads' work: every thread it has or makes runs on `cpus`.
  if (cpus !== undefined && child.pid !== undefined) pin(child.pid, cpus);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ready: Extract<FromServer, { type: 'ready' }>;
  try {
    ready = await next(child, 'ready', 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    port: ready.port,
    pid: child.pid ?? 0,
    async cpuMicros() {
      const reply = next(child, 'cpu', 5000);
      child.send('cpu');
      return (await reply).micros;
    },
    async stop() {
      const reply = next(child, 'stopped', 5000);
      child.send('stop');
      const { storeErrors } = await reply;
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      return { storeErrors };
    },
  };
}
