import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { replayGraceOption } from '@sluice/core/adapter';
import { StateDb } from '@sluice/host/state';
import type { Command, CommandContext, ServerStats, Session } from './commands/context.js';
import { handshakeCommands } from './commands/handshake.js';
import { leaseCommands } from './commands/leases.js';
import { sluiceCommands } from './commands/sluice.js';
import { smyteCommands } from './commands/smyte.js';
import { Connection, type ConnectionHost } from './connection.js';
import { type ResolvedServerOptions, resolveServerOptions, type ServerOptions } from './options.js';
import * as resp from './resp.js';
import { SERVER_ENV } from './server-env.js';

export const VERSION = '0.1.0';

/**
 * The sluice server: a TCP listener speaking RESP2, one `Connection` per client, all of them on one
 * LMDB environment. Create it, `await listen()`, and `await close()` to stop (the last
 * acknowledged writes are already committed; close waits for the rest).
 *
 * @example
 * const server = new SluiceServer({ dataDir: './sluice-data', port: 9049 });
 * await server.listen();
 */
export class SluiceServer implements ConnectionHost {
  readonly commands: ReadonlyMap<string, Command>;
  readonly maxFrameBytes: number;
  readonly maxArgs: number;
  private readonly options: ResolvedServerOptions;
  private readonly db: StateDb;
  private readonly net: Server;
  private readonly connections = new Set<Connection>();
  private readonly stats: ServerStats = {
    startedAt: Date.now(),
    connections: 0,
    totalConnections: 0,
    rejectedConnections: 0,
    commands: 0,
    protocolErrors: 0,
    pausedForBackpressure: 0,
    sweptKeys: 0,
    maxCommandsPerTurn: 0,
  };
  private sweepTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: ServerOptions) {
    this.options = resolveServerOptions(options);
    this.maxFrameBytes = this.options.maxFrameBytes;
    this.maxArgs = this.options.maxArgs;
    this.commands = new Map(
      Object.entries({ ...handshakeCommands, ...smyteCommands, ...sluiceCommands, ...leaseCommands }),
    );
    this.db = new StateDb(this.options.dataDir, {
      owner: SERVER_ENV,
      durability: this.options.durability,
      shards: this.options.shards,
      cacheKeys: this.options.cacheKeys,
      clock: this.options.clock,
      // A state written at a command's AT (a replay) outlives its ttl by RedisStore's and
      // HostStore's default grace: the trace's time may stand still while the server's clock runs.
      replayGrace: replayGraceOption('sluice-server', undefined),
      log: (e, f) => this.log(e, f),
    });
    const tls = this.options.tls;
    this.net =
      tls === undefined
        ? createServer((socket) => this.accept(socket))
        : createTlsServer({ key: tls.key, cert: tls.cert }, (socket) => this.accept(socket));
    this.net.on('tlsClientError', (err: Error) => this.log('tls-error', { error: err.message }));
    this.net.on('error', (err) => this.log('server-error', { error: err.message }));
  }

  /** Starts listening; resolves with the bound port. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.net.once('error', reject);
      this.net.listen(this.options.port, this.options.host, () => {
        this.net.off('error', reject);
        const { port } = this.net.address() as AddressInfo;
        const tls = this.options.tls;
        if (this.options.worker === 0) this.scheduleSweep(this.options.sweepInterval);
        this.log('listening', {
          host: this.options.host,
          port,
          tls: tls !== undefined,
          dataDir: this.options.dataDir,
          shards: this.db.shardCount,
        });
        resolve(port);
      });
    });
  }

  /**
   * The LMDB state the commands decide in: the rate limit service (`LmdbBackend`) decides in the
   * same transactions, so RESP and gRPC callers share one set of counters.
   */
  get stateDb(): StateDb {
    return this.db;
  }

  get port(): number {
    return (this.net.address() as AddressInfo | null)?.port ?? this.options.port;
  }

  /**
   * Stops accepting, writes the replies already computed, closes every connection and the database,
   * then logs `stopped`.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const port = this.port; // read while bound: once closed, the address is gone
      clearTimeout(this.sweepTimer as NodeJS.Timeout);
      clearImmediate(this.sweepTimer as NodeJS.Immediate);
      this.sweepTimer = undefined;
      const stopped = new Promise<void>((resolve) => this.net.close(() => resolve()));
      await Promise.all([...this.connections].map((c) => c.close()));
      await stopped;
      await this.db.close();
      this.log('stopped', { port, dataDir: this.options.dataDir });
    })();
    return this.closing;
  }

  /** Resolves when every write queued so far (decisions, sweep removals) is on disk. */
  flushed(): Promise<void> {
    return this.db.flushed();
  }

  /**
   * The next sweep step: after `sweepInterval`, or on the next turn (requests in between) while a
   * step finds a full batch of expired keys, so a flood of unique keys is removed as fast as it
   * expires, one bounded batch per turn.
   */
  private scheduleSweep(delay: number): void {
    if (this.closing !== undefined) return;
    const next = () => {
      const visited = this.sweep(this.options.clock()).visited;
      this.scheduleSweep(visited >= this.options.sweepBatch ? 0 : this.options.sweepInterval);
    };
    this.sweepTimer = delay === 0 ? setImmediate(next) : setTimeout(next, delay);
    this.sweepTimer.unref();
  }

  /** One bounded step of expiry (the timer runs them); returns the keys removed. */
  sweepStep(now = this.options.clock()): number {
    return this.sweep(now).removed;
  }

  private sweep(now: number): { visited: number; removed: number } {
    try {
      const step = this.db.sweep(this.options.sweepBatch, now);
      this.stats.sweptKeys += step.removed;
      return step;
    } catch (err) {
      this.log('sweep-error', { error: (err as Error).message });
      return { visited: 0, removed: 0 };
    }
  }

  context(session: Session): CommandContext {
    return {
      session,
      db: this.db,
      stats: this.stats,
      maxLogEntries: this.options.maxLogEntries,
      worker: this.options.worker,
      requirePass: this.options.requirePass,
      version: VERSION,
      port: this.port,
      commandNames: () => [...this.commands.keys()],
    };
  }

  log(event: string, fields: Record<string, unknown>): void {
    try {
      this.options.log(event, fields);
    } catch {
      // A failing logger must not take a connection down.
    }
  }

  closed(connection: Connection): void {
    if (this.connections.delete(connection)) this.stats.connections--;
  }

  private accept(socket: Socket): void {
    this.stats.totalConnections++;
    if (this.closing !== undefined || this.connections.size >= this.options.maxClients) {
      this.stats.rejectedConnections++;
      this.log('connection-rejected', { remote: socket.remoteAddress, reason: 'max-clients' });
      socket.on('error', () => {});
      socket.end(resp.error('ERR max number of clients reached'));
      return;
    }
    const connection = new Connection(socket, this, this.options.requirePass !== undefined);
    this.connections.add(connection);
    this.stats.connections++;
  }
}
