import { createHash } from 'node:crypto';
import type { ClientEvent, RedisClient } from './client.js';

/**
 * A node-redis (`redis` 5 or 6) client, `createClient(...)` or `createCluster(...)`, typed by what
 * the store uses. node-redis has no `defineCommand`: scripts run with `evalSha`, falling back to
 * `eval` on `NOSCRIPT` (which also loads the script into the server's cache).
 */
export interface NodeRedisClient {
  /**
   * True once commands can be sent (after `connect()` resolved, and again after a reconnection).
   * A node-redis 5 Cluster has no `isReady`: its slot map being known stands for it.
   */
  readonly isReady?: boolean;
  /** True from `connect()` until `close()`/`destroy()`. */
  readonly isOpen: boolean;
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  del(keys: string[]): Promise<number>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** The primaries a node-redis Cluster knows (0 until its slot map is read). */
function masters(client: NodeRedisClient): number {
  return (client as { masters?: unknown[] }).masters?.length ?? 0;
}

/** A node-redis client: it runs scripts with `evalSha` and has no ioredis `defineCommand`. */
export function isNodeRedis(client: unknown): client is NodeRedisClient {
  if (client === null || typeof client !== 'object') return false;
  const candidate = client as Partial<NodeRedisClient> & { defineCommand?: unknown };
  return (
    typeof candidate.evalSha === 'function' &&
    typeof candidate.eval === 'function' &&
    typeof candidate.isOpen === 'boolean' &&
    candidate.defineCommand === undefined
  );
}

/**
 * The events of `RedisClient` on a node-redis client. A standalone client emits `ready` and `end`
 * as ioredis does; a Cluster announces its slot map with `connect` and its close with `disconnect`.
 */
function eventName(event: ClientEvent | '+node', cluster: boolean): string | undefined {
  if (event === '+node') return undefined; // the store opens no node connections on node-redis
  if (!cluster) return event;
  if (event === 'ready') return 'connect';
  if (event === 'end') return 'disconnect';
  return event;
}

/**
 * node-redis replies to a Redis error (`WRONGTYPE`, `ERR …`, `NOSCRIPT`) with an `ErrorReply`
 * (`SimpleError`/`BlobError` in 5+), whose `name` is plain `Error`: found by its class's name so
 * that this package needs no import of `redis`.
 */
function isErrorReply(error: unknown): error is Error {
  for (let proto = error instanceof Error ? Object.getPrototypeOf(error) : null; proto !== null; ) {
    if ((proto.constructor as { name?: string } | undefined)?.name === 'ErrorReply') return true;
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}

/**
 * The store's errors read a Redis error reply by ioredis' name for it (`ReplyError`): a node-redis
 * reply error gets that name, so the breaker counts it as Redis answering, not Redis being away.
 */
function asReplyError(error: unknown): unknown {
  if (isErrorReply(error)) {
    Object.defineProperty(error, 'name', { value: 'ReplyError', configurable: true });
  }
  return error;
}

/**
 * Wraps a node-redis client in the `RedisClient` the store is written against: scripts, `DEL`,
 * status and the connection events. The wrapper owns nothing; the caller connects and closes the
 * node-redis client. The same wrapper is returned for the same client.
 */
export function fromNodeRedis(client: NodeRedisClient): RedisClient {
  let wrapped = wrappers.get(client);
  if (wrapped === undefined) {
    wrapped = wrap(client);
    wrappers.set(client, wrapped);
  }
  return wrapped;
}

/** One wrapper per node-redis client: stores sharing a client share its registered scripts. */
const wrappers = new WeakMap<NodeRedisClient, RedisClient>();

function wrap(client: NodeRedisClient): RedisClient {
  const cluster = 'masters' in client;
  const scripts = new Map<string, (numberOfKeys: number, ...args: (string | number)[]) => Promise<unknown>>();
  // The listeners the store registered, by the function it gave, so removeListener finds them.
  const listen = (
    method: 'on' | 'once',
    event: ClientEvent | '+node',
    listener: (...args: unknown[]) => void,
  ) => {
    const name = eventName(event, cluster);
    if (name !== undefined) client[method](name, listener);
  };
  const wrapper = {
    isCluster: cluster,
    get status(): string {
      if (client.isReady ?? (client.isOpen && masters(client) > 0)) return 'ready';
      // Opened but not ready: connecting, or reconnecting after a loss (calls wait, then time out).
      return client.isOpen ? 'connecting' : 'closed';
    },
    defineCommand(name: string, definition: { lua: string }): void {
      if (scripts.has(name)) return;
      const { lua } = definition;
      const sha = createHash('sha1').update(lua).digest('hex');
      const run = (numberOfKeys: number, ...args: (string | number)[]) => {
        const options = {
          keys: args.slice(0, numberOfKeys).map(String),
          arguments: args.slice(numberOfKeys).map(String),
        };
        return client.evalSha(sha, options).catch((error: unknown) => {
          if (isErrorReply(error) && error.message.startsWith('NOSCRIPT')) {
            return client.eval(lua, options).catch((again: unknown) => Promise.reject(asReplyError(again)));
          }
          return Promise.reject(asReplyError(error));
        });
      };
      scripts.set(name, run);
      Object.defineProperty(wrapper, name, { value: run, enumerable: false });
    },
    slotOwner(slot: number): string | undefined {
      const slots = (client as { slots?: ({ master?: { address?: string } } | undefined)[] }).slots;
      return slots?.[slot]?.master?.address;
    },
    del(...keys: string[]): Promise<number> {
      return client.del(keys).catch((error: unknown) => Promise.reject(asReplyError(error)));
    },
    once(event: ClientEvent, listener: (...args: unknown[]) => void): unknown {
      listen('once', event, listener);
      return wrapper;
    },
    on(event: 'ready' | '+node', listener: (...args: unknown[]) => void): unknown {
      listen('on', event, listener);
      return wrapper;
    },
    removeListener(event: ClientEvent, listener: (...args: unknown[]) => void): unknown {
      const name = eventName(event, cluster);
      if (name !== undefined) client.off(name, listener);
      return wrapper;
    },
  };
  return wrapper;
}
