import type { Socket } from 'node:net';
import RedisParser from 'redis-parser';
import type { Command, CommandContext, CommandResult, Session } from './commands/context.js';
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

interface Pending {
  readonly reply: resp.Reply;
  readonly durable: Promise<unknown> | undefined;
}

let nextId = 1;

/**
 * One client: RESP frames in (redis-parser), replies out in the order the commands came
 * (pipelining). Replies of one socket read are written together, after the writes they report are
 * durable. When the socket's write buffer is full (a client that sends without reading), reading
 * pauses until it drains, so a slow reader holds a bounded amount of the server's memory.
 */
export class Connection {
  readonly session: Session = { id: nextId++, authenticated: false, name: undefined, closing: false };
  private readonly parser: RedisParser;
  private readonly ctx: CommandContext;
  private batch: Pending[] = [];
  /** Replies waiting for durability, in order; later batches queue behind it. */
  private tail: Promise<void> | undefined;
  /** Bytes received since the last complete frame (an upper bound: a chunk that ends a frame resets it). */
  private frameBytes = 0;
  private completedInChunk = false;
  private ended = false;

  constructor(
    private readonly socket: Socket,
    private readonly host: ConnectionHost,
    requirePass: boolean,
  ) {
    this.session.authenticated = !requirePass;
    this.ctx = host.context(this.session);
    this.parser = new RedisParser({
      returnBuffers: true,
      returnReply: (frame: unknown) => this.onFrame(frame),
      returnError: () => this.fail('a client sent an error reply (-), not a command'),
      returnFatalError: (err: Error) => this.fail(err.message),
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => socket.resume());
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
    this.completedInChunk = false;
    try {
      this.parser.execute(chunk);
    } catch (err) {
      // A handler bug must not take the server down: report it and drop this connection.
      this.host.log('internal-error', { id: this.session.id, error: (err as Error).stack });
      this.fail('internal error');
      return;
    }
    this.frameBytes = this.completedInChunk ? 0 : this.frameBytes + chunk.length;
    if (this.frameBytes > this.host.maxFrameBytes && !this.ended) {
      this.fail(`frame larger than ${this.host.maxFrameBytes} bytes (max-frame-bytes)`);
      return;
    }
    this.flush();
  }

  private onFrame(frame: unknown): void {
    this.completedInChunk = true;
    if (this.ended) return;
    if (!Array.isArray(frame) || frame.length === 0 || !frame.every((part) => Buffer.isBuffer(part))) {
      this.fail('a frame that is not an array of bulk strings');
      return;
    }
    this.batch.push(this.run(frame as Buffer[]));
    if (this.session.closing) {
      this.flush();
      this.ended = true;
      void (this.tail ?? Promise.resolve()).then(() => this.socket.end());
    }
  }

  private run(args: Buffer[]): Pending {
    const name = args[0]!.toString('latin1').toLowerCase();
    const command = this.host.commands.get(name);
    const result = this.dispatch(name, command, args);
    return typeof result === 'string' || Buffer.isBuffer(result)
      ? { reply: result, durable: undefined }
      : { reply: result.reply, durable: result.durable };
  }

  private dispatch(name: string, command: Command | undefined, args: Buffer[]): CommandResult {
    this.ctx.stats.commands++;
    if (args.length - 1 > this.host.maxArgs) {
      return resp.error(`ERR too many arguments (${args.length - 1}; max-args is ${this.host.maxArgs})`);
    }
    if (command === undefined) {
      const shown = args
        .slice(1, 4)
        .map((a) => `'${a.toString().slice(0, 64)}'`)
        .join(' ');
      return resp.error(`ERR unknown command '${name.slice(0, 64)}', with args beginning with: ${shown}`);
    }
    if (!this.session.authenticated && command.beforeAuth !== true) {
      return resp.error('NOAUTH Authentication required.');
    }
    const [min, max] = command.arity;
    const count = args.length - 1;
    if (count < min || (max >= 0 && count > max)) {
      return resp.error(command.arityError?.(name) ?? `ERR wrong number of arguments for '${name}' command`);
    }
    return command.run(args, this.ctx);
  }

  /** Sends the replies of this read: now if nothing is waiting for durability, else in order after it. */
  private flush(): void {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    const waits = batch.some((p) => p.durable !== undefined);
    if (this.tail === undefined && !waits) {
      this.write(batch.map((p) => p.reply));
      return;
    }
    const only = this.tail === undefined ? onlyWait(batch) : undefined;
    if (only !== undefined) {
      // The common case ('commit': every reply of the read waits for the same turn's commit): one
      // callback on that promise, not one async step per reply.
      const mine: Promise<void> = only.then(
        () =>
          this.release(
            mine,
            batch.map((p) => p.reply),
          ),
        (err: unknown) =>
          this.release(
            mine,
            batch.map((p) => failed(p, err, this.host)),
          ),
      );
      this.tail = mine;
      return;
    }
    const previous = this.tail ?? Promise.resolve();
    const mine = previous
      .then(() => Promise.all(batch.map((p) => settle(p, this.host))))
      .then((replies) => this.write(replies));
    this.tail = mine;
    void mine.then(() => {
      if (this.tail === mine) this.tail = undefined;
    });
  }

  private release(batch: Promise<void>, replies: resp.Reply[]): void {
    if (this.tail === batch) this.tail = undefined;
    this.write(replies);
  }

  private write(replies: resp.Reply[]): void {
    if (this.socket.destroyed) return;
    const out = replies.every((r) => typeof r === 'string')
      ? replies.join('')
      : Buffer.concat(replies.map(resp.toBuffer));
    if (!this.socket.write(out)) {
      // The client is not reading: stop reading its commands until it catches up.
      this.ctx.stats.pausedForBackpressure++;
      this.socket.pause();
    }
  }

  /** A protocol violation: say why, log it, and close the connection. */
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
      if (!this.socket.destroyed) this.socket.end(resp.error(`ERR Protocol error: ${reason}`));
      this.socket.destroySoon();
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

async function settle(pending: Pending, host: ConnectionHost): Promise<resp.Reply> {
  if (pending.durable === undefined) return pending.reply;
  try {
    await pending.durable;
    return pending.reply;
  } catch (err) {
    return failed(pending, err, host);
  }
}

/** A reply whose write failed to persist becomes an error; one that waited for nothing stands. */
function failed(pending: Pending, err: unknown, host: ConnectionHost): resp.Reply {
  if (pending.durable === undefined) return pending.reply;
  host.log('persistence-error', { error: (err as Error).message });
  return resp.error(`ERR persistence failed: ${(err as Error).message}`);
}

/** The one promise every waiting reply of `batch` waits for, if they all wait for the same. */
function onlyWait(batch: readonly Pending[]): Promise<unknown> | undefined {
  let only: Promise<unknown> | undefined;
  for (const p of batch) {
    if (p.durable === undefined) continue;
    if (only !== undefined && p.durable !== only) return undefined;
    only = p.durable;
  }
  return only;
}
