import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * One app process (a script run with `node --import tsx` from the repo root, its config as JSON in
 * argv), driven by JSON lines: one command per stdin line, one reply per stdout line. The script
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
    const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(config)], {
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
