import type { RedisClient } from './client.js';
import { clusterNodesReady } from './cluster-nodes.js';
import { turnCork } from './turn-cork.js';

/**
 * A script registered with ioredis `defineCommand`: `numberOfKeys`, the keys, then ARGV. `R`: what
 * the script returns.
 */
export type ScriptCommand<R = unknown[]> = (numberOfKeys: number, ...args: (string | number)[]) => Promise<R>;

/**
 * Registers `lua` under `name` on `client` once (a client shared by several stores keeps the first
 * registration: the script of one version of this package is the same text), and returns the
 * command bound to the client. ioredis runs it with EVALSHA, falling back to EVAL on `NOSCRIPT`.
 * On a Cluster, a call waits for the primaries being connected (see `clusterNodesReady`). On a
 * standalone ioredis-family client, the calls of one event-loop turn share a write (see `TurnCork`).
 */
export function scriptCommand<R = unknown[]>(
  client: RedisClient,
  name: string,
  lua: string,
): ScriptCommand<R> {
  // defineCommand adds a method named `name`, which no static type of the client can know.
  const table = client as unknown as Record<string, ScriptCommand<R> | undefined>;
  if (typeof table[name] !== 'function') client.defineCommand(name, { lua });
  const command = table[name]!.bind(client);
  const cork = turnCork(client);
  if (cork !== null) {
    return (numberOfKeys, ...args) => {
      cork.before();
      return command(numberOfKeys, ...args);
    };
  }
  return (numberOfKeys, ...args) => {
    const wait = clusterNodesReady(client);
    return wait === undefined
      ? command(numberOfKeys, ...args)
      : wait.then(() => command(numberOfKeys, ...args));
  };
}

/** `DEL keys` once the Cluster's primaries being connected are ready (see `clusterNodesReady`). */
export function deleteKeys(client: RedisClient, keys: string[]): Promise<number> {
  const wait = clusterNodesReady(client);
  return wait === undefined ? client.del(...keys) : wait.then(() => client.del(...keys));
}

/**
 * A script's `now` argument: the caller's time, else the client clock, else '' so that the
 * script reads Redis `TIME` (`time: 'redis'`). Decimal, exact (`String` of a double round-trips).
 * A caller's `now` (a replay) carries `replayGrace` as `'now,grace'`: Redis expires keys in wall
 * time, and a replay may run slower than it, so its keys live that much longer (see the option).
 */
export function nowArg(
  now: number | undefined,
  redisTime: boolean,
  clock: () => number,
  replayGrace = 0,
): string {
  if (now !== undefined) return replayGrace > 0 ? `${now},${replayGrace}` : String(now);
  return redisTime ? '' : String(clock());
}
