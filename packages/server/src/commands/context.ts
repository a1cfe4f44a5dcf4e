import type { Queued, StateDb } from '@sluice/host/state';
import type { Reply } from '../resp.js';

/** One client connection's session, as commands see it. */
export interface Session {
  readonly id: number;
  authenticated: boolean;
  name: string | undefined;
  /** Set by QUIT: the connection ends after this reply is written. */
  closing: boolean;
}

/** Counters reported by INFO. */
export interface ServerStats {
  readonly startedAt: number;
  connections: number;
  totalConnections: number;
  rejectedConnections: number;
  commands: number;
  protocolErrors: number;
  pausedForBackpressure: number;
  sweptKeys: number;
  /** The most commands one connection ran in one event-loop turn (bounded by the turn budget). */
  maxCommandsPerTurn: number;
}

/**
 * What a command may use: the session, the state, the configuration. The server clock is read in
 * the transaction a command's job runs in (StateTxn.now), never when the command arrives.
 */
export interface CommandContext {
  readonly session: Session;
  readonly db: StateDb;
  readonly stats: ServerStats;
  /** The largest sliding-window-log `limit` accepted (its log holds up to `limit` entries). */
  readonly maxLogEntries: number;
  /** This process's index among the server's workers (0 when there is one). */
  readonly worker: number;
  readonly requirePass: string | undefined;
  readonly version: string;
  readonly port: number;
  readonly commandNames: () => readonly string[];
}

/**
 * A reply now, or a job queued for this turn's transaction (`ctx.db.enqueue`), whose reply is sent
 * once the transaction has reached the durability the server promises.
 */
export type CommandResult = Reply | Queued<Reply>;

export interface Command {
  /** Accepted argument counts after the command name: [min, max], max -1 for no bound. */
  readonly arity: readonly [number, number];
  /** The wrong-arity error text; Redis's own when absent. */
  readonly arityError?: (name: string) => string;
  /** Runs before AUTH when a password is set (AUTH, HELLO, QUIT). */
  readonly beforeAuth?: boolean;
  readonly run: (args: readonly Buffer[], ctx: CommandContext) => CommandResult;
}
