import type { Reply } from '../resp.js';
import type { StateDb } from '../state-db.js';

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
}

/** What a command may use: the session, the state, the server clock (ms), the configuration. */
export interface CommandContext {
  readonly session: Session;
  readonly db: StateDb;
  readonly stats: ServerStats;
  readonly now: () => number;
  readonly requirePass: string | undefined;
  readonly version: string;
  readonly port: number;
  readonly commandNames: () => readonly string[];
}

/**
 * A reply, or a reply to send only once `durable` settles (the decision's write has reached the
 * durability the server promises). A rejected `durable` turns the reply into an error.
 */
export type CommandResult = Reply | { readonly reply: Reply; readonly durable: Promise<unknown> | undefined };

export interface Command {
  /** Accepted argument counts after the command name: [min, max], max -1 for no bound. */
  readonly arity: readonly [number, number];
  /** The wrong-arity error text; Redis's own when absent. */
  readonly arityError?: (name: string) => string;
  /** Runs before AUTH when a password is set (AUTH, HELLO, QUIT). */
  readonly beforeAuth?: boolean;
  readonly run: (args: readonly Buffer[], ctx: CommandContext) => CommandResult;
}
