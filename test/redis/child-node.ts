import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { nodeScript } from '../setup/node-script.js';
import { Cluster, Redis } from './client-family.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * One app process (a script bundled by test/setup/node-script.ts, run from the repo root, its config
 * as JSON in argv), driven by JSON lines: one command per stdin line, one reply per stdout line. The script
 * writes one line when it is ready.
 */
export class ChildNode {
  private readonly replies: ((line: string) => void)[] = [];
  private stderr = '';

  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => this.replies.shift()?.(line));
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
  }

  static async start(script: string, config: object): Promise<ChildNode> {
    const child = spawn(process.execPath, [await nodeScript(script), JSON.stringify(config)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const node = new ChildNode(child);
    await node.next();
    return node;
  }

  /** The next line the process writes, parsed; rejects if it exits first. */
  private next<T>(): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const exited = (code: number | null) =>
        reject(new Error(`app process exited (${code}) before answering:\n${this.stderr}`));
      this.child.once('exit', exited);
      this.replies.push((line) => {
        this.child.off('exit', exited);
        resolve(JSON.parse(line) as T);
      });
    });
  }

  send<T>(command: object): Promise<T> {
    const reply = this.next<T>();
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
    return reply;
  }

  get errors(): string {
    return this.stderr;
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }
}

/** In a child process: a client to the test's Redis (a Cluster when `cluster`), connected, offline queue off. */
export async function connectChild(config: {
  ports: readonly number[];
  cluster: boolean;
}): Promise<Redis | Cluster> {
  const client = config.cluster
    ? new Cluster(
        config.ports.map((port) => ({ host: '127.0.0.1', port })),
        { enableOfflineQueue: false, lazyConnect: true },
      )
    : new Redis({ host: '127.0.0.1', port: config.ports[0]!, enableOfflineQueue: false, lazyConnect: true });
  await client.connect();
  return client;
}
