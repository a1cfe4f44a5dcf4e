import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeScript } from '../setup/node-script.js';
import type { Command } from './worker-commands.js';

// Bundled once at import (test/setup/node-script.ts): the constructor forks synchronously.
const WORKER = await nodeScript(fileURLToPath(new URL('./worker-process.ts', import.meta.url)));

/** A worker process (worker-process.ts) on one HostStore path, driven over IPC. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  /** Exit code or signal once the process has exited, else `undefined`. */
  exit: string | undefined;
  private serial = 0;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();

  constructor(path: string, onAcks?: (acks: [number, number][]) => void, shards?: number) {
    this.child = fork(WORKER, [], {
      execArgv: [],
      env: {
        ...process.env,
        SLUICE_HOST_PATH: path,
        ...(shards === undefined ? {} : { SLUICE_HOST_SHARDS: String(shards) }),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = new Promise<never>((_, reject) => {
      this.child.once('exit', (code, signal) => {
        this.exit = String(signal ?? code);
        const error = new Error(`worker ${this.child.pid} exited (${this.exit})`);
        for (const { reject: fail } of this.pending.values()) fail(error);
        this.pending.clear();
        reject(error);
      });
    });
    exited.catch(() => {});
    this.ready = new Promise<void>((resolve, reject) => {
      exited.catch(reject);
      this.child.on(
        'message',
        (message: {
          type: string;
          id?: number;
          result?: unknown;
          error?: string;
          acks?: [number, number][];
        }) => {
          if (message.type === 'ready') resolve();
          else if (message.type === 'acks') onAcks?.(message.acks!);
          else if (message.type === 'result') {
            const waiting = this.pending.get(message.id!);
            this.pending.delete(message.id!);
            if (message.error !== undefined) waiting?.reject(new Error(message.error));
            else waiting?.resolve(message.result);
          }
        },
      );
    });
  }

  call<T>(command: Command): Promise<T> {
    const id = ++this.serial;
    return new Promise<T>((resolve, reject) => {
      if (this.exit !== undefined) {
        reject(new Error(`worker exited (${this.exit})`));
        return;
      }
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ id, command });
    });
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exit !== undefined) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    await gone;
  }
}

/** `count` workers on `path` (each HostStore with `shards`), once every one is ready. */
export async function startWorkers(
  path: string,
  count: number,
  onAcks?: (worker: number, acks: [number, number][]) => void,
  shards?: number,
): Promise<WorkerProcess[]> {
  const workers = Array.from(
    { length: count },
    (_, i) => new WorkerProcess(path, onAcks && ((acks) => onAcks(i, acks)), shards),
  );
  await Promise.all(workers.map((w) => w.ready));
  return workers;
}
