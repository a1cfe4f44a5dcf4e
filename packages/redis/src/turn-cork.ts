// node:timers' own function, not the global: an app's tests that fake the global timers
// (vi.useFakeTimers, sinon) would otherwise hold every Redis write back until they advance time.
import { setImmediate as afterThisTurn } from 'node:timers';
import type { RedisClient } from './client.js';

/** The connection's socket, as ioredis exposes it (`client.stream`). */
interface Socket {
  readonly writable: boolean;
  cork(): void;
  uncork(): void;
}

/** What a standalone ioredis-family client has beyond {@link RedisClient}: its socket and options. */
interface SocketClient {
  /** Absent until the first connection. */
  readonly stream?: Socket;
  pipeline?: unknown;
  readonly options?: { readonly enableAutoPipelining?: boolean };
}

/**
 * Most calls one write carries. One write per turn whatever its size left Redis idle while the
 * client built the whole turn, then the client idle while Redis ran it: a closed loop of 32
 * callers on one client made half the decisions per second it made uncorked (24 k against 30 k
 * here, issue 36). Flushing every 16 calls lets Redis start on a turn's first calls while the
 * client builds the rest: 45 k/s, at the same client CPU per call as one write per turn (~20 µs
 * against ~30 µs uncorked); 8 measured the same, 4 a little less.
 */
export const TURN_BATCH = 16;

/**
 * Script calls made in one turn of the event loop, written to Redis together. Every request of an
 * HTTP app checking its limit costs one EVALSHA; sent one by one, each is a socket write of its
 * own (a system call: ~20% of a Fastify + Redis server's CPU in the profile of issue 36). The
 * first call of a turn corks the client's socket and `setImmediate` uncorks it, so the calls of
 * every request whose data arrived in the same poll phase leave together, in writes of up to
 * {@link TURN_BATCH} calls. Each call is still
 * the client's own command (its promise, its reply, its NOSCRIPT retry): nothing else changes.
 * An ioredis pipeline would batch them too, but building one per turn (it copies every defined
 * script into the pipeline) looked costlier than the writes it saves in a first, noisy try.
 *
 * Only for a standalone ioredis-family client: a Cluster writes to a socket per node, node-redis
 * already writes a tick's commands together, and a client created with `enableAutoPipelining`
 * batches by itself.
 */
export class TurnCork {
  private corked: Socket | undefined;
  /** Calls the cork has buffered since it was set or last flushed. */
  private buffered = 0;

  constructor(private readonly client: SocketClient) {}

  /**
   * Call before each command: the first of a turn corks the socket until the turn's end, and a
   * call that finds TURN_BATCH buffered flushes them first.
   */
  readonly before = (): void => {
    const corked = this.corked;
    if (corked !== undefined) {
      if (this.buffered === TURN_BATCH) {
        corked.uncork(); // the count drops to 0: the buffered calls leave in one write
        corked.cork();
        this.buffered = 0;
      }
      this.buffered++;
      return;
    }
    const stream = this.client.stream;
    // Not connected (yet, or any more): ioredis queues or refuses the command itself.
    if (stream === undefined || !stream.writable) return;
    stream.cork();
    this.corked = stream;
    this.buffered = 1;
    afterThisTurn(this.release);
  };

  private readonly release = (): void => {
    const stream = this.corked;
    this.corked = undefined;
    // The socket corked, even if ioredis has since replaced it (a reconnect): a cork is per socket.
    stream?.uncork();
  };
}

const corks = new WeakMap<RedisClient, TurnCork | null>();

/** The client's turn cork (one per client, shared by the stores on it), or null where it does not apply. */
export function turnCork(client: RedisClient): TurnCork | null {
  let found = corks.get(client);
  if (found === undefined) {
    const candidate = client as unknown as SocketClient;
    found =
      // An ioredis-family client has `pipeline` (node-redis, wrapped by node-redis.ts, has not).
      !client.isCluster &&
      typeof candidate.pipeline === 'function' &&
      candidate.options?.enableAutoPipelining !== true
        ? new TurnCork(candidate)
        : null;
    corks.set(client, found);
  }
  return found;
}
