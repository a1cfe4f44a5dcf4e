import type { Socket } from 'node:net';
import { Queued } from '@sluice/host/state';
import type { Command, CommandContext, CommandResult, Session } from './commands/context.js';
import { ProtocolError, RequestParser } from './request-parser.js';
import * as resp from './resp.js';

/** What a connection needs from its server. */
export interface ConnectionHost {
  readonly commands: ReadonlyMap<string, Command>;
  readonly maxFrameBytes: number;
  readonly maxArgs: number;
  context(session: Session): CommandContext;
  log(event: string, fields: Record<string, unknown>): void;
  closed(connection: Connection): void;
}

/**
 * The most commands one connection runs in one event-loop turn. Past it the connection stops
 * reading and goes on in the next turn, after every other connection has had its turn: a client
 * pipelining thousands of commands (up to 2 MB arrive in one turn: libuv reads a socket up to 32
 * times) makes the others wait for at most this many of its commands, each of bounded cost.
 * Redis bounds the same way by reading at most 16 KB per client per turn.
 */
export const COMMANDS_PER_TURN = 256;

let nextId = 1;

/**
 * Event-loop turns, counted: a connection's budget is per turn, across all the reads of its socket
 * in that turn. One setImmediate per turn (the check phase, after every socket was read) moves it.
 */
let turn = 0;
let turnEnding = false;
function currentTurn(): number {
  if (!turnEnding) {
    turnEnding = true;
    setImmediate(() => {
      turn++;
      turnEnding = false;
    });
  }
  return turn;
}

/** The command a name sent by a client stands for: its exact bytes first, then lower-cased. */
const byName = new Map<string, Command | undefined>();

/**
 * One client: RESP requests in (request-parser.ts), replies out in the order the commands came
 * (pipelining). The replies of one turn are written together, after the transaction holding their
 * writes has committed. When the socket's write buffer is full (a client that sends without
 * reading), reading pauses until it drains, so a slow reader holds a bounded amount of the
 * server's memory.
 */
export class Connection {
  readonly session: Session = { id: nextId++, authenticated: false, name: undefined, closing: false };
  private readonly parser: RequestParser;
  private readonly ctx: CommandContext;
  /** This turn's replies, in order: sent now, or with their turn's transaction. */
  private batch: CommandResult[] = [];
  /** Replies waiting for their transaction, in order; later batches queue behind it. */
  private tail: Promise<void> | undefined;
  private ended = false;
  /** Why reading is paused: the client is not reading its replies, or this turn's budget is spent. */
  private waitingForDrain = false;
  private waitingForTurn = false;
  /** Commands run in turn `turn` (see {@link COMMANDS_PER_TURN}). */
  private ran = 0;
  private turn = -1;

  constructor(
    private readonly socket: Socket,
    private readonly host: ConnectionHost,
    requirePass: boolean,
  ) {
    this.session.authenticated = !requirePass;
    this.ctx = host.context(this.session);
    this.parser = new RequestParser(host.maxFrameBytes);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => {
      this.waitingForDrain = false;
      if (!this.waitingForTurn) socket.resume();
    });
    socket.on('error', (err) =>
      this.host.log('connection-error', { id: this.session.id, error: err.message }),
    );
    socket.on('close', () => {
      this.ended = true;
      this.host.closed(this);
    });
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    this.parser.push(chunk);
    if (!this.waitingForTurn) this.runCommands();
  }

  /** Runs the complete commands received, up to this turn's budget, then sends their replies. */
  private runCommands(): void {
    const now = currentTurn();
    if (this.turn !== now) {
      this.turn = now;
      this.ran = 0;
    }
    try {
      for (let args = this.parser.next(); args !== undefined; args = this.parser.next()) {
        this.batch.push(this.run(args));
        this.ran++;
        if (this.session.closing) {
          this.flush();
          this.ended = true;
          void (this.tail ?? Promise.resolve()).then(() => this.socket.end());
          return;
        }
        if (this.ran >= COMMANDS_PER_TURN) {
          this.nextTurn();
          break;
        }
      }
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      this.fail(err.message);
      return;
    } finally {
      if (this.ran > this.ctx.stats.maxCommandsPerTurn) this.ctx.stats.maxCommandsPerTurn = this.ran;
    }
    this.flush();
  }

  /** The budget is spent: stop reading, and go on after the other connections' turn. */
  private nextTurn(): void {
    this.waitingForTurn = true;
    this.socket.pause();
    setImmediate(() => {
      this.waitingForTurn = false;
      if (this.ended) return;
      if (!this.waitingForDrain) this.socket.resume();
      this.runCommands();
    });
  }

  private run(args: Buffer[]): CommandResult {
    this.ctx.stats.commands++;
    const sent = args[0]!.toString('latin1');
    let command = byName.get(sent);
    if (command === undefined && !byName.has(sent)) {
      command = this.host.commands.get(sent.toLowerCase());
      // Names clients send are few; one inventing names must not grow this without bound.
      if (byName.size >= 1000) byName.clear();
      byName.set(sent, command);
    }
    if (args.length - 1 > this.host.maxArgs) {
      return resp.error(`ERR too many arguments (${args.length - 1}; max-args is ${this.host.maxArgs})`);
    }
    if (command === undefined) {
      const shown = args
        .slice(1, 4)
        .map((a) => `'${a.toString().slice(0, 64)}'`)
        .join(' ');
      return resp.error(
        `ERR unknown command '${sent.toLowerCase().slice(0, 64)}', with args beginning with: ${shown}`,
      );
    }
    if (!this.session.authenticated && command.beforeAuth !== true) {
      return resp.error('NOAUTH Authentication required.');
    }
    const [min, max] = command.arity;
    const count = args.length - 1;
    if (count < min || (max >= 0 && count > max)) {
      const name = sent.toLowerCase();
      return resp.error(command.arityError?.(name) ?? `ERR wrong number of arguments for '${name}' command`);
    }
    try {
      return command.run(args, this.ctx);
    } catch (err) {
      // A handler bug answers that command alone; the connection and its other commands carry on.
      this.host.log('internal-error', {
        id: this.session.id,
        command: sent.toLowerCase(),
        error: (err as Error).stack,
      });
      return resp.error('ERR internal error');
    }
  }

  /** Sends this turn's replies: now if none waits for a transaction, else in order after it. */
  private flush(): void {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    let done: Promise<void> | undefined;
    for (const item of batch) {
      if (item instanceof Queued) {
        done = item.done;
        break;
      }
    }
    if (this.tail === undefined && done === undefined) {
      this.write(batch as resp.Reply[]);
      return;
    }
    // Every job of one turn waits for the same transaction; a batch is one turn's commands, so
    // one callback sends them all, after the batches before it.
    const previous = this.tail;
    const ready = previous === undefined ? done! : done === undefined ? previous : previous.then(() => done);
    const mine: Promise<void> = ready.then(() => {
      if (this.tail === mine) this.tail = undefined;
      this.write(batch.map(replyOf));
    });
    this.tail = mine;
  }

  private write(replies: resp.Reply[]): void {
    if (this.socket.destroyed) return;
    let out: string | Buffer;
    if (replies.length === 1) out = replies[0]!;
    else
      out = replies.every((r) => typeof r === 'string')
        ? replies.join('')
        : Buffer.concat(replies.map(resp.toBuffer));
    if (!this.socket.write(out)) {
      // The client is not reading: stop reading its commands until it catches up.
      this.ctx.stats.pausedForBackpressure++;
      this.waitingForDrain = true;
      this.socket.pause();
    }
  }

  /** A protocol violation: say why, log it, and close the connection (after the replies before it). */
  private fail(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.ctx.stats.protocolErrors++;
    this.host.log('protocol-error', {
      id: this.session.id,
      remote: `${this.socket.remoteAddress}:${this.socket.remotePort}`,
      reason,
    });
    this.flush();
    const last = this.tail ?? Promise.resolve();
    void last.then(() => {
      if (this.socket.destroyed) return;
      this.socket.end(resp.error(`ERR Protocol error: ${reason}`));
      // Closing with unread input would reset the connection and could lose the reply: read and
      // drop what the client still sends (onData ignores it) until it closes, for a second at most.
      this.socket.resume();
      setTimeout(() => this.socket.destroy(), 1000).unref();
    });
  }

  /** Ends the connection (server shutdown), after the replies already computed are written. */
  close(): Promise<void> {
    this.ended = true;
    this.flush();
    return (this.tail ?? Promise.resolve()).then(() => {
      this.socket.end();
    });
  }
}

function replyOf(item: CommandResult): resp.Reply {
  if (!(item instanceof Queued)) return item;
  return item.error === undefined
    ? item.result!
    : resp.error(`ERR persistence failed: ${item.error.message}`);
}
