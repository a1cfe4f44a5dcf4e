/**
 * The Redis client the store needs, typed by what it uses rather than by one library's classes, so
 * that `Redis` and `Cluster` instances of ioredis 5, ioredis 6 and iovalkey (Valkey's fork of
 * ioredis) are all accepted as they are: those three share this API.
 */

/** The events the store waits for on a client or a Cluster node. */
export type ClientEvent = 'ready' | 'error' | 'end' | 'close';

/** One connection of a Cluster (`cluster.nodes()`), as the store reads it. */
export interface RedisNodeClient {
  /** `'wait'` (lazy, not connected yet), `'connecting'`, `'connect'`, `'ready'`, `'close'`, `'end'`… */
  readonly status: string;
  connect(): Promise<void>;
  once(event: ClientEvent, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: ClientEvent, listener: (...args: unknown[]) => void): unknown;
}

/** `new Redis(...)` (standalone or Sentinel) or `new Cluster(...)` of ioredis 5, ioredis 6 or iovalkey. */
export interface RedisClient {
  /** True on a Cluster: keys of one script call must then share a hash slot. */
  readonly isCluster: boolean;
  /** The connection's state: `'ready'` once commands can be sent. */
  readonly status: string;
  /** Registers a Lua script as a command of the client (EVALSHA, EVAL on `NOSCRIPT`). */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  del(...keys: string[]): Promise<number>;
  once(event: ClientEvent, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: ClientEvent, listener: (...args: unknown[]) => void): unknown;
  on(event: 'ready' | '+node', listener: (...args: unknown[]) => void): unknown;
  /** A Cluster's node connections (absent on a standalone client). */
  nodes?(role: 'master'): RedisNodeClient[];
  /** An ioredis Cluster's slot map: `slots[slot][0]` is the primary's `host:port`. */
  readonly slots?: readonly (readonly string[] | undefined)[];
  /** The primary owning a slot (`host:port`), where the client has no ioredis `slots` (node-redis). */
  slotOwner?(slot: number): string | undefined;
}

/** The primary owning each slot of a Cluster client, as the client knows it now; undefined for a standalone client. */
export function slotOwner(client: RedisClient): ((slot: number) => string | undefined) | undefined {
  if (!client.isCluster) return undefined;
  if (typeof client.slotOwner === 'function') return (slot) => client.slotOwner!(slot);
  return (slot) => client.slots?.[slot]?.[0];
}
