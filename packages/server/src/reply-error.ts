/**
 * Whether `error` is sluice-server replying that this one call is wrong: a reply error (ioredis
 * names it `ReplyError`) starting `ERR ` (a syntax error, too many arguments, a write that could
 * not be persisted), except `ERR max number of clients`, the server refusing the connection
 * (`server.ts`). Such a reply proves the server answers, so the call gate's breaker hears a
 * success, not the server being away (`GateOptions.backendAnswered`). The server sends no other
 * reply errors (no `WRONGTYPE`, no Cluster).
 */
export function serverAnswered(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return false;
  const message = error.message;
  return message.startsWith('ERR ') && !message.startsWith('ERR max number of clients');
}
