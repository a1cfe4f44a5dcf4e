/**
 * One fresh run of one subject (main.ts starts it, pinned with taskset): a node:cluster primary
 * with the subject's primary half (the IPC peers' server; nothing for the others) and `workers`
 * worker processes, each holding the subject as its users do. Two phases, each started in every
 * worker at once:
 * 1. one key: `clients` concurrent callers per worker, `rounds` checks each, on one fresh key
 *    limited to `limit` (fixed window of an hour): how many were admitted in all;
 * 2. throughput: `clients` concurrent callers per worker on `keys` keys under a limit never reached,
 *    `warmup` ms then `duration` ms measured: decisions per worker, and the CPU time of every process
 *    of the run (workers and primary) during the measurement.
 * Prints one JSON line: the result.
 *
 *   node --import tsx bench/src/host/cluster-run.ts '<json: RunConfig>'
 */
import cluster, { type Worker } from 'node:cluster';
import { SUBJECTS } from './subjects.js';

export interface RunConfig {
  readonly subject: string;
  readonly workers: number;
  readonly clients: number;
  readonly rounds: number;
  readonly limit: number;
  readonly keys: number;
  readonly warmup: number;
  readonly duration: number;
  readonly hostPath: string;
  readonly redisPort: number;
  readonly run: string;
}

export interface WorkerFigures {
  readonly decisions: number;
  readonly failures: number;
  /** ms the measurement lasted in this worker. */
  readonly ms: number;
  readonly cpuUs: number;
}

export interface RunResult {
  readonly subject: string;
  /** Admitted in all in the one-key phase (the limit is `limit`). */
  readonly admitted: number;
  /** Calls of the one-key phase answered by a failure (a timeout), not by the limit. */
  readonly oneKeyFailures: number;
  readonly workers: readonly WorkerFigures[];
  /** CPU µs of the primary during the measurement (the IPC peers' server runs there). */
  readonly primaryCpuUs: number;
}

/** A limit no run reaches: every decision of the throughput phase is an admission. */
const NEVER_REACHED = 1_000_000_000;

type ToWorker = { phase: 'one-key' } | { phase: 'measure' };
type FromWorker =
  | { type: 'ready' }
  | { type: 'one-key'; admitted: number; failures: number }
  | { type: 'measured'; figures: WorkerFigures };

const config: RunConfig = JSON.parse(cluster.isPrimary ? process.argv[2]! : process.env.SLUICE_BENCH_RUN!);
const subject = SUBJECTS.find((s) => s.id === config.subject);
if (subject === undefined) throw new Error(`unknown subject ${config.subject}`);
const backends = { hostPath: config.hostPath, redisPort: config.redisPort, run: config.run };

function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

if (cluster.isPrimary) {
  subject.primary?.();
  const workers: Worker[] = [];
  const next = new Map<Worker, (message: FromWorker) => void>();
  /** Every worker's next message of `type`. */
  const all = <T extends FromWorker['type']>(type: T) =>
    Promise.all(
      workers.map(
        (worker) =>
          new Promise<Extract<FromWorker, { type: T }>>((resolve) =>
            next.set(worker, (message) => {
              if (message.type === type) resolve(message as Extract<FromWorker, { type: T }>);
            }),
          ),
      ),
    );
  for (let i = 0; i < config.workers; i++) {
    const worker = cluster.fork({ SLUICE_BENCH_RUN: JSON.stringify(config) });
    worker.on('message', (message: FromWorker) => next.get(worker)?.(message));
    worker.on('exit', (code) => {
      if (code !== 0 && code !== null) {
        console.error(`worker exited with ${code}`);
        process.exit(1);
      }
    });
    workers.push(worker);
  }
  const ready = await all('ready');
  void ready;
  const oneKey = all('one-key');
  for (const worker of workers) worker.send({ phase: 'one-key' } satisfies ToWorker);
  const oneKeyFigures = await oneKey;
  const admitted = oneKeyFigures.reduce((sum, m) => sum + m.admitted, 0);
  const oneKeyFailures = oneKeyFigures.reduce((sum, m) => sum + m.failures, 0);
  const measured = all('measured');
  const cpuBefore = cpuUs();
  for (const worker of workers) worker.send({ phase: 'measure' } satisfies ToWorker);
  // The primary's CPU over the whole phase, warm-up included: a close bound of its share.
  const figures = (await measured).map((m) => m.figures);
  const primaryCpuUs = (cpuUs() - cpuBefore) * (config.duration / (config.warmup + config.duration));
  const result: RunResult = { subject: subject.id, admitted, oneKeyFailures, workers: figures, primaryCpuUs };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  for (const worker of workers) worker.kill();
  process.exit(0);
} else {
  const oneKey = await subject.make(config.limit, backends);
  const many = await subject.make(NEVER_REACHED, backends);
  const keys = Array.from({ length: config.keys }, (_, i) => `${config.run}:client:${i}`);
  // The IPC peers' replies come on the same channel: only the orchestrating primary's phases count.
  process.on('message', async (message: ToWorker) => {
    if (message?.phase !== 'one-key' && message?.phase !== 'measure') return;
    if (message.phase === 'one-key') {
      let admitted = 0;
      const key = `${config.run}:one-key`;
      await Promise.all(
        Array.from({ length: config.clients }, async () => {
          for (let round = 0; round < config.rounds; round++) {
            if (oneKey.allowed(await oneKey.op(key))) admitted++;
          }
        }),
      );
      process.send!({ type: 'one-key', admitted, failures: oneKey.failures() } satisfies FromWorker);
      return;
    }
    // Every caller loops until the end of its phase, warm-up then the measured part, by the clock
    // (a subject answering synchronously, MemoryStore, never yields to a timer).
    const warm = performance.now() + config.warmup;
    const end = warm + config.duration;
    let decisions = 0;
    let started = 0;
    let failuresBefore = 0;
    let cpuBefore = 0;
    const callers = Array.from({ length: config.clients }, async (_, c) => {
      let k = (c * 7919) % keys.length;
      for (let now = performance.now(); now < end; now = performance.now()) {
        if (now >= warm) {
          if (started === 0) {
            started = now;
            failuresBefore = many.failures();
            cpuBefore = cpuUs();
          }
          decisions++;
        }
        many.allowed(await many.op(keys[k]!));
        k = (k + 7919) % keys.length;
      }
    });
    await Promise.all(callers);
    const ms = performance.now() - started;
    const cpu = cpuUs() - cpuBefore;
    const figures: WorkerFigures = { decisions, failures: many.failures() - failuresBefore, ms, cpuUs: cpu };
    process.send!({ type: 'measured', figures } satisfies FromWorker);
  });
  process.send!({ type: 'ready' } satisfies FromWorker);
}
