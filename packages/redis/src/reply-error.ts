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

/**
 * Whether `error` is Redis Cluster refusing because the cluster is down (`CLUSTERDOWN`: a primary
 * failed and, with `cluster-require-full-coverage yes`, every node refuses every slot until its
 * replica is promoted). The call fails, and the failure policy answers it, but the nodes answered,
 * and at once: they are not away, and their breakers must not open, or their keys would stay the
 * policy's for a whole cooldown after the cluster serves again. node-redis passes the reply on;
 * ioredis re-sends the command (`retryDelayOnClusterDown`, to a random node, which answers `MOVED`
 * back to the refusing one) and past `maxRedirections` rejects with a plain Error naming the last
 * reply: a redirection loop that ended on a reply (never on a closed connection) was answered all
 * along.
 */
export function isClusterDown(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const message = error.message;
  return (
    message.startsWith('CLUSTERDOWN ') ||
    (message.startsWith('Too many Cluster redirections.') && message.includes('Last error: ReplyError: '))
  );
}

/**
 * Whether a failed call still proves Redis answers (the breaker hears a success): RedisStore's
 * and SyncedStore's `backendAnswered`, which the store-neutral call gate (`@sluice/core/gate`)
 * cannot know.
 */
export function backendAnswered(error: unknown): boolean {
  return isReplyError(error) || isClusterDown(error);
}
