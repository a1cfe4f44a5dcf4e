import { type Duration, ErrorCode, SluiceError } from '@sluice/core';
import {
  assertKnownOptions,
  describeValue,
  integerOption,
  oneOfOption,
  replayGraceOption,
  requireOption,
} from '@sluice/core/adapter';
import { MAX_SHARDS } from './shard-of.js';
import type { Durability } from './state-db.js';

/** Where HostStore says that LMDB failed (a turn's transaction, a background flush to disk). */
export interface HostStoreLogger {
  warn(message: string): void;
}

export interface HostStoreOptions {
  /**
   * The directory of the LMDB environment every process of the host opens: created when missing;
   * an existing empty directory is used as is; one holding anything else than a host store's
   * environment, a file, or a path the filesystem refuses (ENOTDIR, EACCES, ...: named in the
   * message, the OS error as `cause`) is refused (`ERR_SLUICE_INVALID_OPTION`). On a local filesystem: LMDB on a network
   * filesystem (NFS, SMB) is not supported.
   */
  path: string;
  /**
   * Most keys stored, across every limit, block record and lease set of every process. A
   * transaction that stores new keys past it removes as many, those that expire soonest first (the
   * expired ones first of all): Redis's `volatile-ttl`. An evicted key starts afresh, as on
   * `MemoryStore`. Give every process the same bound. With `shards`, each shard holds at most
   * ⌈maxKeys / shards⌉ and evicts among its own keys. With the expiry sweep, this is what bounds
   * the data file: each key costs its key's bytes, its state's (about 40 bytes for a token bucket,
   * 9 per entry of a sliding window log) and some 40 bytes of LMDB and index.
   * @default 1_000_000
   */
  maxKeys?: number;
  /**
   * When a decision is answered, relative to its write reaching the disk. `'commit'`: once its
   * write transaction has committed (to the OS page cache: it survives the process being killed,
   * and the environment is flushed to disk once a second); `'flush'`: once a flush to disk that
   * started after the commit has finished (it survives a power loss; one flush serves every
   * decision waiting for it).
   * @default 'commit'
   */
  durability?: Durability;
  /**
   * The LMDB environments a new `path`'s state is split over, 1 to 64: each key's state (its
   * limits, block records and lease sets) lives in one, chosen by a hash of the key. LMDB runs one
   * write transaction at a time per environment, so with shards the host's processes decide in
   * parallel on different shards instead of queueing for one lock (over 8 shards, 8 sluice-server
   * workers decided 3.3–4.5× one worker pipelined and 2.9–6.8× unpipelined; over one environment
   * 0.9–1.2× and 1.4–1.8×). Fixed when the directory is made: an existing one keeps its count and
   * refuses another (`ERR_SLUICE_INVALID_OPTION`); give every process the same value (processes
   * starting together on a new directory race to make it). A process alone gains nothing, and
   * pays a transaction per shard that a turn's decisions touch.
   * @default the directory's count; 1 for a new one
   */
  shards?: number;
  /**
   * Keys whose committed state this process keeps decoded in front of LMDB, so that a returning
   * key is read without touching LMDB. It is emptied whenever another process has committed since
   * this one last did (it never serves a stale value), so it helps most a process that writes alone
   * in bursts. 0 turns it off. Roughly 200 bytes each for a token bucket.
   * @default 10_000
   */
  cacheKeys?: number;
  /**
   * ms between two steps of the expiry sweep (each process runs its own; a step finding nothing
   * due takes a few µs), and at which stale readers of killed processes are cleared. 0: no timer
   * (call `sweep()` yourself).
   * @default 1000
   */
  sweepInterval?: number;
  /** Expired keys removed by one step of the sweep (bounds the time it holds LMDB's write lock). @default 1000 */
  sweepBatch?: number;
  /**
   * The store's clock, ms since the epoch: the time of calls made without `now`, and of expiry.
   * Read when a call's write transaction runs (inside LMDB's lock, not when the call is made), so
   * the decisions on a key are in time order whichever process makes them. @default Date.now
   */
  clock?: () => number;
  /**
   * How long, by the store's clock, a state written at a `now` passed to `check()` (a replay)
   * outlives its own ttl. States expire by the store's clock while a replayed state lives in the
   * trace's time: a trace replayed slower than real time (or at one frozen `now`) would lose its
   * state early and admit too much. With the grace a replay gets the memory store's answers as
   * long as it falls no more than `replayGrace` behind real time over one state's life, as
   * RedisStore's does. Costs room: each key a replay writes stays up to that much longer. Calls
   * without `now` are not affected. 0: no grace.
   * @default '10m'
   */
  replayGrace?: Duration | 0;
  /**
   * Where the store says LMDB failed (a turn's transaction failed and its decisions were retried
   * one by one, a decision failed again, the background flush to disk failed); `false`: nowhere.
   * A failed decision also rejects its call, which the adapters answer by their `storeFailure`.
   * @default console
   */
  logger?: HostStoreLogger | false;
}

export const KNOWN = [
  'path',
  'maxKeys',
  'durability',
  'shards',
  'cacheKeys',
  'sweepInterval',
  'sweepBatch',
  'clock',
  'replayGrace',
  'logger',
] as const satisfies readonly (keyof HostStoreOptions)[];

export type ResolvedHostStoreOptions = Required<
  Omit<HostStoreOptions, 'logger' | 'replayGrace' | 'shards'>
> & {
  logger: HostStoreLogger | undefined;
  shards: number | undefined;
  /** ms, a whole number. */
  replayGrace: number;
};

/** Validates HostStore's options at creation: each bad value is a coded error naming it. */
export function resolveHostStoreOptions(options: HostStoreOptions): ResolvedHostStoreOptions {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError(
      ErrorCode.MISSING_OPTION,
      `HostStore needs its options ({ path }); got ${describeValue(options)}`,
      { option: 'path' },
    );
  }
  assertKnownOptions('HostStore', options, KNOWN);
  const path = requireOption('path', options.path);
  if (typeof path !== 'string' || path === '') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `path must be a non-empty directory path; got ${describeValue(path)}`,
      { option: 'path', value: path },
    );
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `clock must be a function returning ms since the epoch; got ${describeValue(clock)}`,
      { option: 'clock', value: clock },
    );
  }
  const logger = options.logger ?? console;
  if (logger !== false && typeof (logger as HostStoreLogger | null)?.warn !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `logger must be an object with warn(message), or false; got ${describeValue(logger)}`,
      { option: 'logger', value: logger },
    );
  }
  return {
    path,
    maxKeys: integerOption('maxKeys', options.maxKeys ?? 1_000_000),
    durability: oneOfOption('durability', options.durability ?? 'commit', ['commit', 'flush']),
    shards: options.shards === undefined ? undefined : integerOption('shards', options.shards, 1, MAX_SHARDS),
    cacheKeys: integerOption('cacheKeys', options.cacheKeys ?? 10_000, 0),
    sweepInterval: integerOption('sweepInterval', options.sweepInterval ?? 1000, 0, 2 ** 31 - 1),
    sweepBatch: integerOption('sweepBatch', options.sweepBatch ?? 1000),
    clock,
    replayGrace: replayGraceOption('HostStore', options.replayGrace),
    logger: logger === false ? undefined : logger,
  };
}
