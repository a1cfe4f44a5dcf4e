import type { EnvOwner } from './data-dir.js';
import { StateCache } from './state-cache.js';
import { openStateEnv, type StateEnv } from './state-env.js';
import { SnapshotReader } from './state-reader.js';
import { StateTxn } from './state-txn.js';

/**
 * When a decision is answered, relative to its write reaching LMDB. Either way the write
 * transaction holding it has committed first (on the main thread, with the other decisions of the
 * same event-loop turn); LMDB is opened `noSync`, so a commit reaches the OS page cache and:
 * - `'commit'`: the answer goes now. The write survives a clean restart and the process being
 *   killed (`SIGKILL`). The environment is flushed to disk once a second in the background, as
 *   Redis's AOF with `appendfsync everysec` is: a power loss or kernel crash can lose up to about a
 *   second of writes and, as LMDB warns for `MDB_NOSYNC`, can leave the environment corrupt if it
 *   strikes between two flushes.
 * - `'flush'`: the answer goes once a flush of the environment to disk (`mdb_env_sync`, on
 *   lmdb-js's worker thread) that started after the commit has finished: it survives a power loss
 *   as far as the disk honours flushes. Commits made while a flush runs wait for the next one, so
 *   one flush covers many turns.
 */
export type Durability = 'commit' | 'flush';

/** A job's work on the state, run inside the turn's write transaction; returns its result. */
export type Job<T> = (tx: StateTxn) => T;

/**
 * A job waiting for its turn's transaction: `result` is set when the job runs, and `done` resolves
 * (it never rejects) once the result may be given out; a job whose transaction failed has its
 * `error` set instead by then.
 */
export class Queued<T = unknown> {
  result: T | undefined;
  error: Error | undefined;
  constructor(
    readonly run: Job<T>,
    readonly done: Promise<void>,
  ) {}
}

type Log = (event: string, fields: Record<string, unknown>) => void;

/** How a StateDb opens its environment and bounds it. */
export interface StateDbOptions {
  /** Who opens it (the option naming the directory, for errors). */
  readonly owner: EnvOwner;
  readonly durability: Durability;
  /** Keys cached decoded in front of LMDB (state-cache.ts); 0: none. */
  readonly cacheKeys: number;
  /** Most keys stored: past it, a transaction that added keys evicts (StateTxn.evict). Absent: no bound. */
  readonly maxKeys?: number | undefined;
  /**
   * The store's clock (ms since the epoch), read once per transaction inside LMDB's lock
   * (StateTxn.now): the time of the decisions made without a caller's time, and of expiry.
   */
  readonly clock: () => number;
  /** ms a state written at a caller's time (a replay) outlives its ttl (StateTxn.writeFrom). */
  readonly replayGrace: number;
  readonly log: Log;
}

/**
 * The limit state in LMDB (state-env.ts) and the transactions that change it, for sluice-server
 * and HostStore alike. Nothing writes outside a transaction: each change queues a {@link Job},
 * and all the jobs queued during one event-loop turn run in order in one write transaction at the
 * end of the turn (setImmediate), which commits before any of their results is given out. Inside
 * it a job reads the latest committed state and its own turn's earlier writes (read your own
 * writes, across callers), and several processes on one environment stay exact: LMDB runs one
 * write transaction at a time across them. One transaction per turn rather than one per decision
 * amortises the commit (a turn of a busy process holds many decisions).
 *
 * One job's failure (a bug, a value LMDB refuses) must not fail the others: when the turn's
 * transaction fails, each of its jobs runs again in a transaction of its own, and only those that
 * fail again get an error.
 */
export class StateDb {
  private readonly env: StateEnv;
  private readonly cache: StateCache;
  /** The last transaction id this process committed: another id in between means another writer. */
  private lastTxnId = -1;
  /** Transactions run (committed or not): marks the cache entries each writes. */
  private serial = 0;
  /**
   * ms spent in write transactions (waiting for LMDB's lock, running the jobs, committing): the
   * part of the work that LMDB runs one process at a time, for INFO (`transaction_ms`).
   */
  transactionMs = 0;
  private turn: Queued[] | undefined;
  private turnDone: Promise<void> | undefined;
  private endTurn: (() => void) | undefined;
  /** `'flush'`: the flush running now, and whether commits made since wait for another. */
  private flushing: Promise<void> | undefined;
  private flushAgain: Promise<void> | undefined;
  /** `'commit'`: the once-a-second flush to disk. */
  private readonly syncTimer: NodeJS.Timeout | undefined;

  private readonly durability: Durability;
  private readonly maxKeys: number | undefined;
  private readonly clock: () => number;
  private readonly replayGrace: number;
  private readonly log: Log;

  constructor(path: string, options: StateDbOptions) {
    this.durability = options.durability;
    this.replayGrace = options.replayGrace;
    this.maxKeys = options.maxKeys;
    this.clock = options.clock;
    this.log = options.log;
    this.env = openStateEnv(options.owner, path);
    this.cache = new StateCache(options.cacheKeys);
    if (this.durability === 'commit') {
      this.syncTimer = setInterval(() => {
        this.sync().catch((err: Error) => this.log('sync-error', { error: err.message }));
      }, 1000);
      this.syncTimer.unref();
    }
  }

  /** Queues `run` for this turn's transaction. */
  enqueue<T>(run: Job<T>): Queued<T> {
    if (this.turn === undefined) {
      this.turn = [];
      this.turnDone = new Promise<void>((resolve) => {
        this.endTurn = resolve;
      });
      setImmediate(() => this.commitTurn());
    }
    const queued = new Queued(run, this.turnDone!);
    this.turn.push(queued as Queued);
    return queued;
  }

  /** Runs this turn's jobs and commits them (a no-op when none are queued). */
  private commitTurn(): void {
    const jobs = this.turn;
    const end = this.endTurn;
    if (jobs === undefined || end === undefined) return;
    this.turn = undefined;
    this.turnDone = undefined;
    this.endTurn = undefined;
    try {
      this.transact((tx) => {
        for (const job of jobs) job.result = job.run(tx);
      });
    } catch (err) {
      this.log('transaction-failed', { jobs: jobs.length, error: (err as Error).message });
      for (const job of jobs) {
        try {
          this.transact((tx) => {
            job.result = job.run(tx);
          });
        } catch (alone) {
          this.log('persistence-error', { error: (alone as Error).message });
          job.result = undefined;
          job.error = alone as Error;
        }
      }
    }
    if (this.durability === 'commit') {
      end();
      return;
    }
    this.flushAfterCommit().then(end, (err: Error) => {
      this.log('persistence-error', { error: err.message });
      for (const job of jobs) {
        job.result = undefined;
        job.error = err;
      }
      end();
    });
  }

  /** Runs `body` in one write transaction and commits it; throws (nothing written) when either fails. */
  private transact(body: (tx: StateTxn) => void): void {
    const serial = ++this.serial;
    let tx: StateTxn | undefined;
    let txnId = -1;
    const started = performance.now();
    try {
      this.env.root.transactionSync(() => {
        txnId = this.env.root.getWriteTxnId();
        // Another process committed since our last commit: what the cache holds may be stale.
        if (txnId !== this.lastTxnId + 1) this.cache.clear();
        tx = new StateTxn(this.env, this.cache, serial, this.clock(), this.replayGrace);
        body(tx);
        if (tx.added > 0 && this.maxKeys !== undefined) this.bound(tx, this.maxKeys);
      });
    } finally {
      this.transactionMs += performance.now() - started;
    }
    if (tx === undefined) return;
    // A transaction that wrote nothing commits no new id.
    this.lastTxnId = tx.wrote ? txnId : txnId - 1;
    for (const entry of tx.touched) entry.value = entry.pending;
  }

  /** Past `maxKeys`, evicts the keys that expire soonest (StateTxn.evict), in the same transaction. */
  private bound(tx: StateTxn, maxKeys: number): void {
    const over = (this.env.state.getStats() as { entryCount: number }).entryCount - maxKeys;
    if (over > 0) tx.evict(over, tx.now);
  }

  /** A reader of the latest committed state, outside any write transaction (for peeks). */
  snapshot(): SnapshotReader {
    return new SnapshotReader(this.env);
  }

  /** Resolves after a flush to disk that started after this call. */
  private flushAfterCommit(): Promise<void> {
    if (this.flushing === undefined) {
      this.flushing = this.sync().finally(() => {
        this.flushing = undefined;
      });
      return this.flushing;
    }
    // A flush is running but may have started before this commit: wait for the next one.
    this.flushAgain ??= this.flushing.then(
      () => this.startAgain(),
      () => this.startAgain(),
    );
    return this.flushAgain;
  }

  private startAgain(): Promise<void> {
    this.flushAgain = undefined;
    return this.flushAfterCommit();
  }

  /** Flushes the environment to disk (mdb_env_sync, on lmdb-js's worker). */
  private sync(): Promise<void> {
    // `sync` is on lmdb-js's database object (open.js) but missing from its type declarations.
    const root = this.env.root as unknown as { sync(callback: (err: Error | null) => void): void };
    return new Promise((resolve, reject) => root.sync((err) => (err ? reject(err) : resolve())));
  }

  /**
   * One bounded step of expiry: reads up to `limit` due entries of the expiry index and removes
   * the keys as good as new at `now` (store time); see StateTxn.sweep. Runs in its own
   * transaction, between requests.
   */
  sweep(limit: number, now: number): { visited: number; removed: number } {
    let step = { visited: 0, removed: 0 };
    this.transact((tx) => {
      step = tx.sweep(limit, now);
    });
    return step;
  }

  /**
   * Frees the reader slots of processes that died (a killed worker's), which LMDB otherwise keeps,
   * and with them the pages of their last snapshot. Returns how many it freed.
   */
  clearStaleReaders(): number {
    return this.env.root.readerCheck();
  }

  /** Keys stored (committed), for INFO. */
  count(): number {
    return (this.env.state.getStats() as { entryCount: number }).entryCount;
  }

  /** Resolves when every job queued so far is committed and the environment flushed to disk. */
  async flushed(): Promise<void> {
    this.commitTurn();
    await this.sync();
  }

  /** Runs the jobs still queued, flushes, then closes the environment. */
  async close(): Promise<void> {
    clearInterval(this.syncTimer);
    this.commitTurn();
    await this.flushing?.catch(() => {});
    await this.sync();
    await this.env.root.close();
  }
}
