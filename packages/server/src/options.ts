import { ErrorCode, SluiceError } from '@sluice/core';
import { assertKnownOptions, integerOption, oneOfOption, requireOption } from '@sluice/core/adapter';
import { type Durability, MAX_SHARDS } from '@sluice/host/state';

export interface ServerOptions {
  /**
   * Directory of the LMDB environment: created when missing; an existing empty directory is used
   * as is. A directory holding anything else than a sluice-server environment of this version's
   * format is refused (`ERR_SLUICE_INVALID_OPTION`).
   */
  dataDir: string;
  /** TCP port; 0 picks a free one. @default 9049 (Smyte's) */
  port?: number;
  /** Address to bind (`--bind`). Loopback unless you mean it: TLS is off without `tls`, and the password is optional. @default '127.0.0.1' */
  host?: string;
  /**
   * Serve TLS (node:tls) with this PEM key and certificate instead of plain TCP.
   * @default undefined (plain TCP)
   */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** Password clients must give with AUTH before any other command. @default undefined (none) */
  requirePass?: string;
  /** Most connections at once; further ones get an error and are closed. @default 10000 */
  maxClients?: number;
  /** Largest RESP frame (one command with its arguments), in bytes; a larger one closes the connection. @default 1048576 */
  maxFrameBytes?: number;
  /** Most arguments in one command. @default 1024 */
  maxArgs?: number;
  /**
   * The LMDB environments a new `dataDir`'s state is split over, 1 to 64 (`--shards`): each key's
   * state lives in one, chosen by a hash of its key, and LMDB runs one write transaction at a time
   * per environment, so several `--workers` decide in parallel only on different shards. Fixed
   * when the directory is made: an existing directory keeps its count, and refuses another one
   * given here (`ERR_SLUICE_INVALID_OPTION`). @default the directory's count; 1 for a new one
   */
  shards?: number;
  /** When a decision is acknowledged, see {@link Durability}. @default 'commit' */
  durability?: Durability;
  /**
   * Keys whose committed state is held decoded in memory in front of LMDB, the first cached
   * dropped first when full (a returning key is then read without touching LMDB); 0 turns the
   * cache off. It holds only committed values, so it changes nothing an acknowledged decision
   * survives.
   * Roughly 200 bytes each for a token bucket. @default 100000
   */
  cacheKeys?: number;
  /**
   * The largest `limit` a sliding window log (`sliding-window-log:limit=…`) may have: its log holds
   * up to `limit` entries and every check reads them all, so this bounds what one key can cost the
   * server (a larger limit is refused with `ERR_SLUICE_INVALID_OPTION`). @default 10000
   */
  maxLogEntries?: number;
  /** ms between two steps of the expiry sweep while no expired keys are waiting. @default 1000 */
  sweepInterval?: number;
  /** Expired keys removed by one step of the sweep (bounds the time it holds the event loop). @default 1000 */
  sweepBatch?: number;
  /**
   * The server's clock, ms since the epoch: the time of decisions made without `AT` and of
   * expiry, read when a command's write transaction runs (inside LMDB's lock), so the decisions
   * on a key are in time order across `--workers`. For tests and simulations (a clock moved by
   * hand). @default Date.now
   */
  clock?: () => number;
  /**
   * This process's index among the processes serving one `dataDir` (`--workers`): only worker 0
   * runs the expiry sweep. @default 0
   */
  worker?: number;
  /**
   * Where events are reported (`listening`, `stopped`, protocol errors, rejected connections, ...: the
   * README lists them). @default one JSON line per event on stderr
   */
  log?: (event: string, fields: Record<string, unknown>) => void;
}

const KNOWN = [
  'dataDir',
  'port',
  'host',
  'requirePass',
  'tls',
  'maxClients',
  'maxFrameBytes',
  'maxArgs',
  'durability',
  'shards',
  'cacheKeys',
  'maxLogEntries',
  'sweepInterval',
  'sweepBatch',
  'clock',
  'worker',
  'log',
] as const satisfies readonly (keyof ServerOptions)[];

export type ResolvedServerOptions = Required<Omit<ServerOptions, 'requirePass' | 'tls' | 'shards'>> & {
  requirePass: string | undefined;
  shards: number | undefined;
  tls: { key: string | Buffer; cert: string | Buffer } | undefined;
};

export function resolveServerOptions(options: ServerOptions): ResolvedServerOptions {
  assertKnownOptions('SluiceServer', options, KNOWN);
  const dataDir = requireOption('dataDir', options.dataDir);
  if (typeof dataDir !== 'string' || dataDir === '') {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'dataDir must be a non-empty path', {
      option: 'dataDir',
      value: dataDir,
    });
  }
  const requirePass = options.requirePass;
  if (requirePass !== undefined && (typeof requirePass !== 'string' || requirePass === '')) {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'requirePass must be a non-empty string', {
      option: 'requirePass',
    });
  }
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host === '') {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'host must be a non-empty string', {
      option: 'host',
      value: host,
    });
  }
  const tls = options.tls;
  if (
    tls !== undefined &&
    (tls === null || typeof tls !== 'object' || tls.key === undefined || tls.cert === undefined)
  ) {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'tls must be { key, cert } (PEM)', { option: 'tls' });
  }
  const log = options.log ?? defaultLog;
  if (typeof log !== 'function') {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'log must be a function', { option: 'log' });
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function') {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'clock must be a function returning ms', {
      option: 'clock',
    });
  }
  return {
    dataDir,
    port: integerOption('port', options.port ?? 9049, 0, 65_535),
    host,
    requirePass,
    tls,
    maxClients: integerOption('maxClients', options.maxClients ?? 10_000),
    maxFrameBytes: integerOption('maxFrameBytes', options.maxFrameBytes ?? 1_048_576, 64),
    maxArgs: integerOption('maxArgs', options.maxArgs ?? 1024),
    durability: oneOfOption('durability', options.durability ?? 'commit', ['commit', 'flush']),
    shards: options.shards === undefined ? undefined : integerOption('shards', options.shards, 1, MAX_SHARDS),
    cacheKeys: integerOption('cacheKeys', options.cacheKeys ?? 100_000, 0),
    maxLogEntries: integerOption('maxLogEntries', options.maxLogEntries ?? 10_000),
    sweepInterval: integerOption('sweepInterval', options.sweepInterval ?? 1000),
    sweepBatch: integerOption('sweepBatch', options.sweepBatch ?? 1000),
    clock,
    worker: integerOption('worker', options.worker ?? 0, 0),
    log,
  };
}

/** The default `log`: one JSON line per event on stderr. */
export function defaultLog(event: string, fields: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`);
}
