import type { RedisClient } from './client.js';
import { resendsClusterDown } from './cluster-options.js';

/**
 * Whether `error` is the backend replying (in the Redis protocol) that this one call is wrong: a
 * reply error (ioredis and its forks name it `ReplyError`) with code `WRONGTYPE` or `ERR` (bad
 * argument, not an integer, a script error), except an `ERR` about the server itself (too many
 * clients). Such an error is deterministic (the same call fails every time while every other key
 * works): it proves the backend answers, so it must not count as the backend being away.
 */
export function isReplyError(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return false;
  const message = error.message;
  if (message.startsWith('WRONGTYPE ')) return true;
  return message.startsWith('ERR ') && !message.startsWith('ERR max number of clients');
}

/** How ioredis (and iovalkey) reject a command past `maxRedirections` whose last error was a reply. */
const LAST_REPLY = 'Too many Cluster redirections. Last error: ReplyError: ';

/**
 * Whether `error` is Redis Cluster refusing because the cluster is down (`CLUSTERDOWN`: a primary
 * failed and, with `cluster-require-full-coverage yes`, every node refuses every slot until its
 * replica is promoted). The call fails, and the failure policy answers it, but the nodes answered,
 * and at once: they are not away, and their breakers must not open, or their keys would stay the
 * policy's for a whole cooldown after the cluster serves again.
 *
 * node-redis, and ioredis with `retryDelayOnClusterDown: 0`, pass the reply on. Past
 * `maxRedirections`, ioredis rejects with a plain Error naming the last error of its loop
 * ("Too many Cluster redirections. Last error: …"): a loop that ended on a reply (never on a
 * closed connection) is answered, except one that ended on `MOVED` or `ASK` from a client that
 * does not re-send `CLUSTERDOWN` (`resendsClusterDown` false). A client that does (`retryDelayOnClusterDown` above 0, ioredis'
 * default) re-sends the refusal to a random node, which answers `MOVED` back to the refusing one,
 * so its `CLUSTERDOWN` loops may end on `MOVED`. With 0 it never re-sends a `CLUSTERDOWN`: a
 * `MOVED` loop is then ioredis chasing a slot to a primary it cannot reach (SIGKILLed, not yet
 * replaced: live nodes answer `MOVED` to it, its connection is closed), which is that node away.
 */
export function isClusterDown(error: unknown, resendsClusterDown: boolean): boolean {
  if (!(error instanceof Error)) return false;
  const message = error.message;
  if (message.startsWith('CLUSTERDOWN ')) return true;
  if (!message.startsWith(LAST_REPLY)) return false;
  const last = message.slice(LAST_REPLY.length);
  return resendsClusterDown || !(last.startsWith('MOVED ') || last.startsWith('ASK '));
}

/**
 * Whether a failed call of `client` still proves Redis answers (the breaker hears a success):
 * RedisStore's and SyncedStore's `backendAnswered`, which the store-neutral call gate
 * (`@sluice/core/gate`) cannot know. The client's `retryDelayOnClusterDown` is read when a call
 * fails, as ioredis reads it when a reply comes.
 */
export function answeredBy(client: RedisClient): (error: unknown) => boolean {
  return function backendAnswered(error) {
    return isReplyError(error) || isClusterDown(error, resendsClusterDown(client));
  };
}
