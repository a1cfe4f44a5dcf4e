import {
  type Algorithm,
  type Decision,
  ErrorCode,
  type LimitCall,
  SluiceError,
  type Store,
} from '@sluice/core';
import { hostKeys } from './host-keys.js';
import { HostLeases } from './host-leases.js';
import {
  type HostStoreOptions,
  type ResolvedHostStoreOptions,
  resolveHostStoreOptions,
} from './host-store-options.js';
import { HostSweep } from './host-sweep.js';
import { chargeIn, checkIn, checkOneIn, peekIn, refundIn, resetIn } from './limit-steps.js';
import { type Job, StateDb } from './state-db.js';

/**
 * Exact limits across the processes of one host, with no server: every process (a Node `cluster`
 * worker, a PM2 instance, any process on the machine) opens the same LMDB environment and decides
 * in process. A decision reads, decides and writes inside an LMDB write transaction, and LMDB runs
 * one write transaction at a time across the processes, so no two decisions on a key interleave
 * wherever they are made. The decisions of one event-loop turn share one transaction (StateDb),
 * committed before any of them is answered. Every algorithm, layered limits all-or-nothing, blocks,
 * shadow mode, refunds, charges and concurrency leases: core's steps over the stored states.
 *
 * @example
 * const store = new HostStore({ path: '/var/lib/my-app/rate-limits' });
 * const limiter = new Limiter({ algorithm: gcra({ rate: 10, period: '1s' }), store });
 */
export class HostStore implements Store {
  /** Concurrency leases in the same environment: a lease limit is exact across the host's processes. */
  readonly leases: HostLeases;
  /** The options as resolved (defaults filled in). */
  readonly options: Readonly<ResolvedHostStoreOptions>;
  private readonly db: StateDb;
  private readonly clock: () => number;
  private readonly sweeper: HostSweep;
  private closing: Promise<void> | undefined;

  constructor(options: HostStoreOptions) {
    this.options = Object.freeze(resolveHostStoreOptions(options));
    const { path, logger } = this.options;
    this.clock = this.options.clock;
    this.db = new StateDb(path, {
      owner: { option: 'path', name: 'sluice host store' },
      durability: this.options.durability,
      shards: this.options.shards,
      cacheKeys: this.options.cacheKeys,
      maxKeys: this.options.maxKeys,
      clock: this.clock,
      replayGrace: this.options.replayGrace,
      log: (event, fields) => logger?.warn(`sluice: HostStore ${path}: ${event} ${JSON.stringify(fields)}`),
    });
    this.sweeper = new HostSweep(this.db, this.options, (event, fields) =>
      logger?.warn(`sluice: HostStore ${path}: ${event} ${JSON.stringify(fields)}`),
    );
    this.leases = new HostLeases((ids, job) => this.run(ids, job), this.db, this.clock);
  }

  /**
   * Runs `job` in this turn's write transaction; resolves with its result once the transaction
   * has committed (and, with `durability: 'flush'`, reached the disk), rejects when it failed.
   */
  private run<T>(ids: readonly string[], job: Job<T>): Promise<T> {
    if (this.closing !== undefined) return Promise.reject(shutDown());
    const queued = this.db.enqueue(ids, job);
    return queued.done.then(() => {
      if (queued.error !== undefined) throw queued.error;
      return queued.result as T;
    });
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    const ids = calls.map((call) => hostKeys.state(call.algorithm, call.key));
    const blockIds = blockIdsOf(calls);
    return this.run(blockIds === undefined ? ids : [...ids, ...blockIds.filter(isId)], (tx) =>
      checkIn(tx, { calls, ids, blockIds, now: now ?? tx.now, storeNow: tx.now }),
    );
  }

  /** The Limiter's direct path for one plain limit: what `consume` answers, without the arrays. */
  consumeOne(
    algorithm: Algorithm,
    key: string,
    cost: number,
    policy: string,
    now: number | undefined,
  ): Promise<Decision> {
    const id = hostKeys.state(algorithm, key);
    return this.run([id], (tx) => checkOneIn(tx, algorithm, id, cost, policy, now ?? tx.now, tx.now));
  }

  /**
   * Each limit's decision as it stands, from the latest committed state, synchronously: a read
   * takes no lock and waits for no writer, in this process or another.
   */
  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    if (this.closing !== undefined) throw shutDown();
    const storeNow = this.clock();
    const ids = calls.map((call) => hostKeys.state(call.algorithm, call.key));
    return peekIn(this.db.snapshot(), {
      calls,
      ids,
      blockIds: blockIdsOf(calls),
      now: now ?? storeNow,
      storeNow,
    });
  }

  /** Forgets each limit's state and block record for its key. */
  reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    const ids = calls.flatMap((call) => [
      hostKeys.state(call.algorithm, call.key),
      hostKeys.block(call.algorithm, call.key),
    ]);
    return this.run(ids, (tx) => resetIn(tx, ids, tx.now));
  }

  /** Gives back units taken earlier (`Algorithm.refund`). */
  refund(calls: readonly LimitCall[], now: number | undefined): Promise<void> {
    const ids = calls.map((call) => hostKeys.state(call.algorithm, call.key));
    return this.run(ids, (tx) => refundIn(tx, { calls, ids, now: now ?? tx.now, storeNow: tx.now }));
  }

  /** Takes up to each call's cost, never below zero (core's `chargeStep`); answers the units taken. */
  charge(calls: readonly LimitCall[], now: number | undefined): Promise<number[]> {
    const ids = calls.map((call) => hostKeys.state(call.algorithm, call.key));
    return this.run(ids, (tx) => chargeIn(tx, { calls, ids, now: now ?? tx.now, storeNow: tx.now }));
  }

  /**
   * One bounded step of expiry now (the timer runs them every `sweepInterval`): removes up to
   * `sweepBatch` keys as good as new at `now` (the store's clock by default). Returns how many.
   */
  sweep(now: number = this.clock()): number {
    if (this.closing !== undefined) throw shutDown();
    return this.db.sweep(this.options.sweepBatch, now).removed;
  }

  /** Keys stored in the environment (by every process), committed. */
  get keyCount(): number {
    return this.db.count();
  }

  /**
   * Stops the sweep, commits the decisions still queued, flushes the environment to disk and
   * closes it in this process (the others carry on). Idempotent; later calls reject.
   */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      this.sweeper.stop();
      await this.db.close();
    })();
    return this.closing;
  }
}

/** Where each call's block record is, when any call has a block (else `undefined`: none read). */
function blockIdsOf(calls: readonly LimitCall[]): (string | undefined)[] | undefined {
  if (calls.every((call) => call.block === undefined)) return undefined;
  return calls.map((call) =>
    call.block === undefined ? undefined : hostKeys.block(call.algorithm, call.key),
  );
}

function isId(id: string | undefined): id is string {
  return id !== undefined;
}

function shutDown(): SluiceError {
  return new SluiceError(
    ErrorCode.STORE_FAILURE,
    'HostStore was shut down: create a new one to decide again',
  );
}
