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
