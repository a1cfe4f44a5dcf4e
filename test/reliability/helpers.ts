import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { nodeScript } from '../setup/node-script.js';
import type { AppConfig, ChildStats } from './app-config.js';

const APP_SERVER = fileURLToPath(new URL('./app-server.ts', import.meta.url));
const RESULTS = fileURLToPath(new URL('../.tmp/reliability/', import.meta.url));

/** An app process the test owns. */
export interface AppProcess {
  readonly port: number;
  /** Exit code or signal once the process has exited (a crash), else `undefined`. */
  readonly exit: string | undefined;
  stats(): Promise<ChildStats>;
  stop(): Promise<void>;
}

/** Forks `app-server.ts` (bundled: test/setup/node-script.ts) with `config`; resolves once it listens. */
export async function startApp(config: AppConfig): Promise<AppProcess> {
  const child: ChildProcess = fork(await nodeScript(APP_SERVER), [], {
    execArgv: [],
    env: { ...process.env, SLUICE_APP: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let exit: string | undefined;
  child.once('exit', (code, signal) => {
    exit = String(signal ?? code);
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('app server did not start within 30 s')), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`app server exited with ${code} before listening`));
    });
    child.on('message', (message: { type: string; port?: number }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve(message.port!);
      }
    });
  });
  return {
    port,
    get exit() {
      return exit;
    },
    stats() {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('app server did not answer stats')), 5_000);
        const onMessage = (message: { type: string; stats?: ChildStats }) => {
          if (message.type !== 'stats') return;
          clearTimeout(timer);
          child.off('message', onMessage);
          resolve(message.stats!);
        };
        child.on('message', onMessage);
        child.send({ type: 'stats' });
      });
    },
    async stop() {
      if (exit !== undefined) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await gone;
    },
  };
}

/** One answered (or not) request. */
export interface Sample {
  /** HTTP status; 0 when no answer came within the bound (or the connection failed). */
  status: number;
  /** ms from sending to the end of the response. */
  ms: number;
  /** Response headers (lower-case names). */
  headers: Record<string, string | string[] | undefined>;
  /** With `get`'s `body`: the body of a refusal (status 400 and up; its first 1,000 characters), to say why it was refused. */
  body?: string;
}

/** A keep-alive agent with at most `sockets` connections per app. */
export function keepAlive(sockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets: sockets });
}

/**
 * GET `path` on a loopback port; never rejects: a request not answered within `bound` ms is status 0.
 * `body`: keep the body of a refusal (floods leave it out: it would hold every refusal's body).
 */
export function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  options: { agent?: Agent; bound?: number; body?: boolean } = {},
): Promise<Sample> {
  const start = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (status: number, responseHeaders: Sample['headers'], body?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const sample: Sample = { status, ms: performance.now() - start, headers: responseHeaders };
      if (body !== undefined) sample.body = body;
      resolve(sample);
    };
    const req = httpRequest(
      { host: '127.0.0.1', port, path, headers, agent: options.agent ?? false },
      (res) => {
        let body: string | undefined;
        if (options.body === true && (res.statusCode ?? 0) >= 400) {
          body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (body!.length < 1_000) body = (body + chunk).slice(0, 1_000);
          });
        } else res.resume();
        res.once('end', () => finish(res.statusCode ?? 0, res.headers, body));
        res.once('error', () => finish(0, {}));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish(0, {});
    }, options.bound ?? 5_000);
    req.once('error', () => finish(0, {}));
    req.end();
  });
}

/**
 * Sends `total` requests for `path` spread round-robin over `ports`, `concurrency` at a time (each
 * worker one request after another on its keep-alive connections).
 */
export async function hammer(
  ports: readonly number[],
  path: string,
  headers: Record<string, string>,
  total: number,
  concurrency: number,
  agent: Agent,
): Promise<Sample[]> {
  const samples: Sample[] = [];
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      samples.push(await get(ports[i % ports.length]!, path, headers, { agent }));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return samples;
}

export interface PhaseFigures {
  requests: number;
  /** Answered with any HTTP status within the bound. */
  answered: number;
  /** 2xx. */
  admitted: number;
  /** 429. */
  limited: number;
  /** 503. */
  unavailable: number;
  /** ms. */
  p50: number;
  p99: number;
  max: number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function figures(samples: readonly Sample[]): PhaseFigures {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    requests: samples.length,
    answered: samples.filter((s) => s.status !== 0).length,
    admitted: samples.filter((s) => s.status >= 200 && s.status < 300).length,
    limited: samples.filter((s) => s.status === 429).length,
    unavailable: samples.filter((s) => s.status === 503).length,
    p50: round(percentile(ms, 50)),
    p99: round(percentile(ms, 99)),
    max: round(ms.at(-1) ?? 0),
  };
}

/** Writes a run's figures to `test/.tmp/reliability/<name>.json` (gitignored) for RELIABILITY.md. */
export function writeResults(name: string, data: unknown): void {
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(`${RESULTS}${name}.json`, `${JSON.stringify(data, null, 2)}\n`);
}

/** Polls `condition` every `every` ms until it holds; throws after `within` ms. For real processes only. */
export async function until(
  what: string,
  condition: () => boolean | Promise<boolean>,
  within = 20_000,
  every = 50,
): Promise<void> {
  const deadline = Date.now() + within;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}
