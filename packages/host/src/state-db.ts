import type { EnvOwner } from './data-dir.js';
import { shardOf } from './shard-of.js';
import { StateCache } from './state-cache.js';
import { entryCount, type StateEnv } from './state-env.js';
import { SnapshotReader, type StateReader } from './state-reader.js';
import { openShards, ShardedReader, ShardedTxn } from './state-shards.js';
import { StateTxn, type StateWriter } from './state-txn.js';

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
export type Job<T> = (tx: StateWriter) => T;

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
    /** The shards of the keys it touches, ascending (state-shards.ts). */
    readonly shards: readonly number[],
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
  /**
   * The shards a new directory's state is split over (state-shards.ts); an existing directory
   * keeps the count it was made with, and refuses another. Absent: 1 for a new directory, the
   * recorded count for an existing one.
   */
  readonly shards?: number | undefined;
  readonly log: Log;
}

/** One shard's environment, and what this process remembers of it. */
interface Shard {
  readonly env: StateEnv;
  /** `[its index]`: the shard list of a job on one key, made once. */
  readonly alone: readonly number[];
  readonly cache: StateCache;
  /** The last transaction id this process committed here: another id in between means another writer. */
  lastTxnId: number;
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
 * With shards (state-shards.ts) a turn's jobs are grouped by the shards their keys fall in: the
 * jobs of each group run in order in one transaction holding those shards' locks (taken in
 * ascending shard order in every process, so two processes never wait for each other in a
 * cycle). Jobs whose shards overlap share a group, so the jobs on one key still run in the order
 * they were queued. A job over several shards is all-or-nothing unless an LMDB commit itself
 * fails between two shards' commits (LMDB has no transaction across environments): then it gets
 * the error and is never run twice (commitGroup).
 *
 * One job's failure (a bug, a value LMDB refuses) must not fail the others: when a group's
 * transaction fails, each of its jobs runs again in a transaction of its own, and only those that
 * fail again get an error.
 */
export class StateDb {
  private readonly shards: readonly Shard[];
  /** Each shard's environment, by index. */
  private readonly envs: readonly StateEnv[];
  /** Transactions run (committed or not): marks the cache entries each writes. */
  private serial = 0;
  /**
   * ms spent in write transactions (waiting for LMDB's locks, running the jobs, committing): the
   * part of the work that LMDB runs one process at a time per shard, for INFO (`transaction_ms`).
   */
  transactionMs = 0;
  private turn: Queued[] | undefined;
  private turnDone: Promise<void> | undefined;
  /** While another process opens the environment (see {@link pause}): no transaction starts. */
  private paused = false;
  /** A turn that came due while paused: committed on {@link resume}. */
  private turnWaiting = false;
  private endTurn: (() => void) | undefined;
  /** `'flush'`: the flush running now, and whether commits made since wait for another. */
  private flushing: Promise<void> | undefined;
  private flushAgain: Promise<void> | undefined;
  /** `'commit'`: the once-a-second flush to disk. */
  private readonly syncTimer: NodeJS.Timeout | undefined;

  private readonly durability: Durability;
  /** Most keys per shard (`maxKeys` shared evenly), or none. */
  private readonly maxKeys: number | undefined;
  private readonly clock: () => number;
  private readonly replayGrace: number;
  private readonly log: Log;

  constructor(path: string, options: StateDbOptions) {
    this.durability = options.durability;
    this.replayGrace = options.replayGrace;
    this.clock = options.clock;
    this.log = options.log;
    const envs = openShards(options.owner, path, options.shards);
    const count = envs.length;
    this.maxKeys = options.maxKeys === undefined ? undefined : Math.ceil(options.maxKeys / count);
    const cacheKeys = Math.ceil(options.cacheKeys / count);
    this.shards = envs.map((env, index) => ({
      env,
      alone: [index],
      cache: new StateCache(cacheKeys),
      lastTxnId: -1,
    }));
    this.envs = envs;
    if (this.durability === 'commit') {
      this.syncTimer = setInterval(() => {
        this.sync().catch((err: Error) => this.log('sync-error', { error: err.message }));
      }, 1000);
      this.syncTimer.unref();
    }
  }

  /** The shards the state is split over (1: none). */
  get shardCount(): number {
    return this.shards.length;
  }

  /**
   * Queues `run` for this turn's transaction. `ids`: every stored key it reads or writes (a key
   * not declared throws when touched, since it could be in a shard the transaction does not hold).
   */
  enqueue<T>(ids: readonly string[], run: Job<T>): Queued<T> {
    if (this.turn === undefined) {
      this.turn = [];
      this.turnDone = new Promise<void>((resolve) => {
        this.endTurn = resolve;
      });
      setImmediate(() => this.commitTurn());
    }
    const queued = new Queued(run, this.turnDone!, this.shardsOf(ids));
    this.turn.push(queued as Queued);
    return queued;
  }

  private shardsOf(ids: readonly string[]): readonly number[] {
    const count = this.shards.length;
    if (count === 1 || ids.length === 0) return ONE_SHARD;
    if (ids.length === 1) return this.shards[shardOf(ids[0]!, count)]!.alone;
    const set = [...new Set(ids.map((id) => shardOf(id, count)))];
    return set.sort((a, b) => a - b);
  }

  /**
   * Starts no transaction until {@link resume}: this turn's jobs, and those queued meanwhile, wait
   * (and so do their callers), and the sweep skips its steps. For the moment another process opens
   * the environment: lmdb-js 3.5.6 can lose a commit made while a process opens it (every opener
   * sets the shared transaction counter from the meta page it read; the host README's known
   * issue). Nothing is in the middle of a transaction when this returns: they run synchronously.
   */
  pause(): void {
    this.paused = true;
  }

  /** Lets transactions start again after {@link pause}, and commits the turn that waited. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.turnWaiting) {
      this.turnWaiting = false;
      this.commitTurn();
    }
  }

  /** Runs this turn's jobs and commits them (a no-op when none are queued). */
  private commitTurn(): void {
    if (this.paused) {
      this.turnWaiting = true;
      return;
    }
    const jobs = this.turn;
    const end = this.endTurn;
    if (jobs === undefined || end === undefined) return;
    this.turn = undefined;
    this.turnDone = undefined;
    this.endTurn = undefined;
    if (this.shards.length === 1) this.commitGroup(ONE_SHARD, jobs);
    else for (const group of groupsOf(jobs)) this.commitGroup(group.shards, group.jobs);
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

  /**
   * Runs `jobs` in order in one transaction over `shards`; when it fails, each job alone. When
   * some shards committed before another's commit failed (PartialCommit), a job within them
   * keeps its result (its writes stand), one within the others runs alone, and one over both
   * gets the error: its writes stand in part, and running it again would apply them twice.
   */
  private commitGroup(shards: readonly number[], jobs: readonly Queued[]): void {
    try {
      this.transact(shards, (tx) => {
        for (const job of jobs) job.result = job.run(tx);
      });
    } catch (thrown) {
      const committed = thrown instanceof PartialCommit ? thrown.committed : [];
      const err = thrown instanceof PartialCommit ? thrown.cause : (thrown as Error);
      this.log(committed.length === 0 ? 'transaction-failed' : 'partial-commit', {
        jobs: jobs.length,
        error: err.message,
        ...(committed.length === 0 ? {} : { committed }),
      });
      for (const job of jobs) {
        const inCommitted = job.shards.filter((shard) => committed.includes(shard)).length;
        if (inCommitted === job.shards.length) continue;
        if (inCommitted > 0) {
          job.result = undefined;
          job.error = err;
          continue;
        }
        try {
          this.transact(job.shards, (tx) => {
            job.result = job.run(tx);
          });
        } catch (alone) {
          this.log('persistence-error', { error: (alone as Error).message });
          job.result = undefined;
          job.error = alone as Error;
        }
      }
    }
  }

  /**
   * Runs `body` in one write transaction over `shards` (ascending; each shard's environment locked
   * in that order) and commits it; throws (nothing written) when either fails. `body` gets the
   * shard's own StateTxn when there is one shard, else a ShardedTxn over theirs.
   */
  private transact(shards: readonly number[], body: (tx: StateWriter) => void): void {
    if (shards.length === 1) {
      this.transactOne(this.shards[shards[0]!]!, body);
      return;
    }
    const serial = ++this.serial;
    const count = this.shards.length;
    const txs: StateTxn[] = [];
    const ids: number[] = [];
    const started = performance.now();
    const inner = () => {
      // Every lock is held: the clock read now follows every commit of these shards before it.
      const now = this.clock();
      for (const index of shards) {
        const shard = this.shards[index]!;
        const txnId = shard.env.root.getWriteTxnId();
        // Another process committed since our last commit: what the cache holds may be stale.
        if (txnId !== shard.lastTxnId + 1) shard.cache.clear();
        ids.push(txnId);
        txs.push(new StateTxn(shard.env, shard.cache, serial, now, this.replayGrace, shard.env.place));
      }
      const byShard: (StateTxn | undefined)[] = new Array(count);
      shards.forEach((index, i) => {
        byShard[index] = txs[i];
      });
      body(new ShardedTxn(byShard, now));
      txs.forEach((tx, i) => {
        if (tx.added > 0 && this.maxKeys !== undefined)
          this.bound(this.shards[shards[i]!]!, tx, this.maxKeys);
      });
    };
    // The innermost shard commits first: when an outer one's commit then fails, the inner ones
    // stand (LMDB has no transaction across environments).
    const committed: number[] = [];
    const lock = (i: number): void => {
      if (i === shards.length) inner();
      else {
        this.shards[shards[i]!]!.env.root.transactionSync(() => lock(i + 1));
        committed.push(shards[i]!);
      }
    };
    try {
      lock(0);
    } catch (err) {
      if (committed.length === 0) throw err;
      // What these shards' caches hold of this transaction is unknown now: read LMDB again.
      for (const index of committed) this.shards[index]!.cache.clear();
      throw new PartialCommit(committed, err as Error);
    } finally {
      this.transactionMs += performance.now() - started;
    }
    txs.forEach((tx, i) => {
      // A transaction that wrote nothing commits no new id.
      this.shards[shards[i]!]!.lastTxnId = tx.wrote ? ids[i]! : ids[i]! - 1;
      for (const entry of tx.touched) entry.value = entry.pending;
    });
  }

  /**
   * {@link transact} over one shard, the common case (every transaction with one shard): one lock,
   * no arrays or closures per transaction beyond LMDB's callback.
   */
  private transactOne(shard: Shard, body: (tx: StateTxn) => void): void {
    const serial = ++this.serial;
    let tx: StateTxn | undefined;
    let txnId = -1;
    const started = performance.now();
    try {
      shard.env.root.transactionSync(() => {
        txnId = shard.env.root.getWriteTxnId();
        // Another process committed since our last commit: what the cache holds may be stale.
        if (txnId !== shard.lastTxnId + 1) shard.cache.clear();
        tx = new StateTxn(shard.env, shard.cache, serial, this.clock(), this.replayGrace, shard.env.place);
        body(tx);
        if (tx.added > 0 && this.maxKeys !== undefined) this.bound(shard, tx, this.maxKeys);
      });
    } finally {
      this.transactionMs += performance.now() - started;
    }
    if (tx === undefined) return;
    // A transaction that wrote nothing commits no new id.
    shard.lastTxnId = tx.wrote ? txnId : txnId - 1;
    for (const entry of tx.touched) entry.value = entry.pending;
  }

  /** Past `maxKeys` (its share of it), evicts the shard's keys that expire soonest (StateTxn.evict), in the same transaction. */
  private bound(shard: Shard, tx: StateTxn, maxKeys: number): void {
    const over = entryCount(shard.env) - maxKeys;
    if (over > 0) tx.evict(over, tx.now);
  }

  /** A reader of the latest committed state, outside any write transaction (for peeks). */
  snapshot(): StateReader {
    const envs = this.envs;
    return envs.length === 1 ? new SnapshotReader(envs[0]!) : new ShardedReader(envs);
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

  /** Flushes every shard's environment to disk (mdb_env_sync, on lmdb-js's worker). */
  private async sync(): Promise<void> {
    await Promise.all(this.shards.map((shard) => syncEnv(shard.env)));
  }

  /**
   * One bounded step of expiry in each shard: reads up to `limit` due entries of its expiry index
   * and removes the keys as good as new at `now` (store time); see StateTxn.sweep. Each shard's in
   * its own transaction, between requests. `visited`: the most entries one shard read (`limit`
   * when some shard may have more due), `removed`: the keys removed in all.
   */
  sweep(limit: number, now: number): { visited: number; removed: number } {
    const step = { visited: 0, removed: 0 };
    if (this.paused) return step;
    for (const shard of this.shards) {
      this.transactOne(shard, (tx) => {
        const { visited, removed } = tx.sweep(limit, now);
        step.visited = Math.max(step.visited, visited);
        step.removed += removed;
      });
    }
    return step;
  }

  /**
   * Frees the reader slots of processes that died (a killed worker's), which LMDB otherwise keeps,
   * and with them the pages of their last snapshot. Returns how many it freed.
   */
  clearStaleReaders(): number {
    let freed = 0;
    for (const shard of this.shards) freed += shard.env.root.readerCheck();
    return freed;
  }

  /** Keys stored (committed), for INFO. */
  count(): number {
    let keys = 0;
    for (const shard of this.shards) keys += entryCount(shard.env);
    return keys;
  }

  /** Resolves when every job queued so far is committed and the environment flushed to disk. */
  async flushed(): Promise<void> {
    this.commitTurn();
    await this.sync();
  }

  /** Runs the jobs still queued, flushes, then closes the environments. */
  async close(): Promise<void> {
    clearInterval(this.syncTimer);
    this.paused = false;
    this.turnWaiting = false;
    this.commitTurn();
    await this.flushing?.catch(() => {});
    await this.sync();
    await Promise.all(this.shards.map((shard) => shard.env.root.close()));
  }
}

/** A transaction over several shards of which some committed before another's commit failed. */
class PartialCommit extends Error {
  constructor(
    readonly committed: readonly number[],
    override readonly cause: Error,
  ) {
    super(cause.message);
  }
}

/** The shard list of every job when there is one shard. */
const ONE_SHARD: readonly number[] = [0];

/** Flushes an environment to disk (mdb_env_sync, on lmdb-js's worker). */
function syncEnv(env: StateEnv): Promise<void> {
  // `sync` is on lmdb-js's database object (open.js) but missing from its type declarations.
  const root = env.root as unknown as { sync(callback: (err: Error | null) => void): void };
  return new Promise((resolve, reject) => root.sync((err) => (err ? reject(err) : resolve())));
}

/**
 * A turn's jobs grouped into transactions: jobs whose shards overlap, directly or through other
 * jobs, share one (so the jobs on a key keep their order), each group's jobs in the order queued,
 * its shards ascending. Jobs on one shard each, the common case, make a group per shard.
 */
function groupsOf(jobs: readonly Queued[]): { shards: readonly number[]; jobs: Queued[] }[] {
  // Union-find over shard indices: every job's shards join one set.
  const parent = new Map<number, number>();
  const root = (shard: number): number => {
    let r = shard;
    for (let up = parent.get(r); up !== undefined && up !== r; up = parent.get(r)) r = up;
    parent.set(shard, r);
    return r;
  };
  for (const job of jobs) {
    const first = root(job.shards[0]!);
    for (let i = 1; i < job.shards.length; i++) {
      const other = root(job.shards[i]!);
      if (other !== first) parent.set(other, first);
    }
  }
  const groups = new Map<number, { shards: Set<number>; jobs: Queued[] }>();
  for (const job of jobs) {
    const r = root(job.shards[0]!);
    let group = groups.get(r);
    if (group === undefined) {
      group = { shards: new Set(), jobs: [] };
      groups.set(r, group);
    }
    for (const shard of job.shards) group.shards.add(shard);
    group.jobs.push(job);
  }
  return [...groups.values()].map((group) => ({
    shards: [...group.shards].sort((a, b) => a - b),
    jobs: group.jobs,
  }));
}
