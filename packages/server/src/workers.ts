import cluster, { type Worker } from 'node:cluster';
import { openShards } from '@sluice/host/state';
import { SERVER_ENV } from './server-env.js';

/**
 * Several processes serving one port over one LMDB environment (`--workers N`), with node:cluster:
 * the primary accepts connections and hands each to a worker in turn (round robin, Node's default
 * on Linux), and each worker is a whole `SluiceServer` with the environment open. After the
 * hand-over a connection's bytes go straight to its worker: the primary costs one message per
 * connection, not per command. Decisions stay exact across workers because each one reads,
 * decides and writes inside an LMDB write transaction, and LMDB runs one at a time across
 * processes (state-db.ts); everything else (parsing, the algorithms' reads of the cache, replies,
 * the socket system calls) runs on all cores at once.
 *
 * Why processes, not worker_threads: a listening socket cannot be shared between threads in
 * Node 20, and LMDB is built for several processes (its lock file, robust mutexes: a worker
 * killed inside a transaction does not block the others); `SO_REUSEPORT` (Node 22.12+) lets the
 * kernel spread connections by a hash, unevenly for a few long-lived ones.
 *
 * With `--grpc-port`, each worker also runs the rate limit service on that port: its gRPC server
 * listens with a Node http2 server, a net.Server, so node:cluster shares its port the same way
 * (one gRPC connection, all its calls, to one worker).
 *
 * The primary opens the environment once before forking (so workers never race to create it),
 * lets the workers listen once every one has opened it (openedAwaitServe), restarts a worker that
 * dies (its clients reconnect to the others meanwhile; it opens while they pause, awaitMayOpen),
 * and stops the workers on SIGTERM/SIGINT, each finishing the replies it has computed.
 */

/** The environment variable that tells a forked process which worker it is. */
export const WORKER_ENV = 'SLUICE_SERVER_WORKER';

/**
 * A worker's own server events renamed in its log line: the primary logs `listening` once every
 * worker listens and `stopped` once every worker has stopped.
 */
export const WORKER_EVENTS: Readonly<Record<string, string>> = {
  listening: 'worker-listening',
  stopped: 'worker-stopped',
};

/** What the primary reports, one JSON line per event on stderr. */
type Log = (event: string, fields: Record<string, unknown>) => void;

/** This process's worker index when it is one of several, else `undefined`. */
export function workerIndex(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const index = Number(process.env[WORKER_ENV]);
  return Number.isSafeInteger(index) && index >= 0 ? index : undefined;
}

/** In a worker: tells the primary it is listening. */
export function reportListening(port: number): void {
  process.send?.({ sluice: 'listening', port });
}

/** In a worker: sends the primary `tell` and resolves on its `answer`. */
function askPrimary(tell: string, answer: string): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: { sluice?: string }) => {
      if (message?.sluice !== answer) return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
    process.send?.({ sluice: tell });
  });
}

/**
 * In a worker, before it opens the environment: asks the primary, and resolves when the primary
 * says to open. A process that opens an LMDB environment while another process commits can lose
 * that commit (lmdb-js 3.5.6: every opener sets the shared transaction counter from the meta page
 * it read; packages/host/README.md, "Known issue"). At start the primary says so at once (no
 * worker serves yet); to a worker restarted while the others serve, once they have paused their
 * transactions (see {@link followPauses}).
 */
export function awaitMayOpen(): Promise<void> {
  return askPrimary('may-open', 'open');
}

/** In a worker with its environment open: pauses and resumes its transactions as the primary says. */
export function followPauses(db: { pause(): void; resume(): void }): void {
  process.on('message', (message: { sluice?: string }) => {
    if (message?.sluice === 'pause') {
      db.pause();
      process.send?.({ sluice: 'paused' });
    } else if (message?.sluice === 'resume') db.resume();
  });
}

/** How long the primary waits for the other workers to pause before a restarted worker opens anyway. */
const PAUSE_WAIT = 1000;

/**
 * In a worker, once its environment is open: tells the primary, and resolves when the primary
 * says to serve: at start, once every worker has opened (so that none decides while another
 * opens); for a restarted worker, once it has (the others then resume).
 */
export function openedAwaitServe(): Promise<void> {
  return askPrimary('opened', 'serve');
}

/**
 * In the primary, before forking: creates or checks the state's directory, so that a bad one stops
 * the start-up once and the workers never race to create it. A new directory gets `shards`, else
 * `fresh`; an existing one keeps its count (and refuses another `shards`). Returns the count.
 */
export function openShardsOnce(dataDir: string, shards: number | undefined, fresh: number): number {
  const envs = openShards(SERVER_ENV, dataDir, shards, fresh);
  for (const env of envs) void env.root.close();
  return envs.length;
}

/** Restarts of one worker within {@link RESTART_WINDOW} ms past which the primary gives up. */
const MAX_RESTARTS = 5;
const RESTART_WINDOW = 60_000;

/**
 * Runs the primary of `count` workers: resolves with the exit code once they have all stopped
 * (0 after SIGTERM/SIGINT, 1 when one kept dying). `forward`: signals passed on to every worker
 * (SIGHUP, which reloads the rate limit config in each).
 */
export function runPrimary(
  count: number,
  details: Record<string, unknown>,
  log: Log,
  forward: readonly NodeJS.Signals[] = [],
): Promise<number> {
  const workers = new Map<number, Worker>();
  const restarts = new Map<number, number[]>();
  const listening = new Set<number>();
  const opened = new Set<number>();
  // A message to a worker whose channel has closed (it is dying; its exit is on its way) would be
  // an 'error' event on it: skipped, as its exit handler takes it out of every count.
  const tell = (worker: Worker | undefined, sluice: string) => {
    if (worker?.isConnected()) worker.send({ sluice });
  };
  // Once every worker has opened the environment (see openedAwaitServe): from then on, a worker
  // that opens (a restart) does so while the others are paused, one at a time.
  let serving = false;
  let opening: { index: number; waiting: Set<number>; timer: NodeJS.Timeout | undefined } | undefined;
  const toOpen: number[] = [];
  const letOpen = () => {
    if (opening === undefined) return;
    clearTimeout(opening.timer);
    opening.timer = undefined;
    tell(workers.get(opening.index), 'open');
  };
  const resumeOthers = () => {
    if (opening === undefined) return;
    const index = opening.index;
    clearTimeout(opening.timer);
    opening = undefined;
    for (const [other, worker] of workers) if (other !== index) tell(worker, 'resume');
    log('workers-resumed', { worker: index });
    const next = toOpen.shift();
    if (next !== undefined) grantOpen(next);
  };
  const grantOpen = (index: number) => {
    const worker = workers.get(index);
    if (worker === undefined) {
      const next = toOpen.shift();
      if (next !== undefined) grantOpen(next);
      return;
    }
    if (!serving) {
      tell(worker, 'open');
      return;
    }
    if (opening !== undefined) {
      toOpen.push(index);
      return;
    }
    const others = [...workers.keys()].filter((other) => other !== index);
    opening = { index, waiting: new Set(others), timer: undefined };
    log('workers-paused', { worker: index });
    if (others.length === 0) {
      letOpen();
      return;
    }
    // A worker that never answers (hung) must not keep the restarted one from serving.
    opening.timer = setTimeout(letOpen, PAUSE_WAIT);
    for (const other of others) tell(workers.get(other), 'pause');
  };
  let stopping = false;
  let exitCode = 0;

  return new Promise((resolve) => {
    const fork = (index: number) => {
      const worker = cluster.fork({ [WORKER_ENV]: String(index) });
      workers.set(index, worker);
      log('worker-started', { worker: index, pid: worker.process.pid });
      worker.on('message', (message: { sluice?: string; port?: number }) => {
        if (message?.sluice === 'may-open') {
          grantOpen(index);
          return;
        }
        if (message?.sluice === 'paused') {
          if (opening?.waiting.delete(index) && opening.waiting.size === 0) letOpen();
          return;
        }
        if (message?.sluice === 'opened') {
          if (serving) {
            tell(worker, 'serve');
            if (opening?.index === index) resumeOthers();
            return;
          }
          opened.add(index);
          if (opened.size === count) {
            serving = true;
            log('workers-opened', { workers: count });
            for (const each of workers.values()) tell(each, 'serve');
          }
          return;
        }
        if (message?.sluice !== 'listening') return;
        if (listening.has(index)) {
          log('worker-listening', { worker: index, pid: worker.process.pid });
          return;
        }
        listening.add(index);
        if (listening.size === count) log('listening', { ...details, port: message.port, workers: count });
      });
      worker.on('exit', (code, signal) => {
        if (workers.get(index) === worker) workers.delete(index);
        // The worker opening died, or one the opening waits for: the others must not stay paused.
        if (opening?.index === index) resumeOthers();
        else if (opening?.waiting.delete(index) && opening.waiting.size === 0 && opening.timer) letOpen();
        if (stopping) {
          if (workers.size === 0) finish();
          return;
        }
        log('worker-exit', { worker: index, pid: worker.process.pid, code, signal });
        const now = Date.now();
        const recent = (restarts.get(index) ?? []).filter((at) => at > now - RESTART_WINDOW);
        recent.push(now);
        restarts.set(index, recent);
        if (recent.length > MAX_RESTARTS) {
          log('worker-failing', { worker: index, restarts: recent.length, withinMs: RESTART_WINDOW });
          exitCode = 1;
          stop();
          return;
        }
        fork(index);
      });
    };
    const finish = () => {
      log('stopped', { ...details, workers: count, code: exitCode });
      resolve(exitCode);
    };
    const stop = () => {
      if (stopping) return;
      stopping = true;
      if (workers.size === 0) finish();
      for (const worker of workers.values()) worker.process.kill('SIGTERM');
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    for (const signal of forward) {
      process.on(signal, () => {
        for (const worker of workers.values()) worker.process.kill(signal);
      });
    }
    for (let index = 0; index < count; index++) fork(index);
  });
}
