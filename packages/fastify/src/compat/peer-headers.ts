import type { FastifyReply } from 'fastify';
import type { HeaderSwitches } from './options.js';

/** The names of @fastify/rate-limit's four headers, in one of its two sets. */
export interface HeaderLabels {
  readonly limit: string;
  readonly remaining: string;
  readonly reset: string;
  readonly retryAfter: string;
}

const LEGACY: HeaderLabels = {
  limit: 'x-ratelimit-limit',
  remaining: 'x-ratelimit-remaining',
  reset: 'x-ratelimit-reset',
  retryAfter: 'retry-after',
};
const DRAFT: HeaderLabels = {
  limit: 'ratelimit-limit',
  remaining: 'ratelimit-remaining',
  reset: 'ratelimit-reset',
  retryAfter: 'retry-after',
};

/** The header names `enableDraftSpec` picks. */
export function headerLabels(draftSpec: boolean): HeaderLabels {
  return draftSpec ? DRAFT : LEGACY;
}

/**
 * The plugin's switches: every header on unless the option turns it off by name (a name of the
 * other set is kept, and switches nothing, as there).
 */
export function headerSwitches(
  labels: HeaderLabels,
  given: HeaderSwitches | undefined,
  withRetryAfter: boolean,
): HeaderSwitches {
  const all: Record<string, boolean> = {
    [labels.limit]: true,
    [labels.remaining]: true,
    [labels.reset]: true,
  };
  if (withRetryAfter) all[labels.retryAfter] = true;
  return { ...all, ...given };
}

/** What one request's answer says, in @fastify/rate-limit's units. */
export interface PeerState {
  readonly max: number;
  readonly remaining: number;
  /** Seconds until the window ends (admitted) or the client may retry (refused), rounded up. */
  readonly resetSeconds: number;
}

/** The headers of an admitted request (`addHeadersOnExceeding`). */
export function writeAdmittedHeaders(
  reply: FastifyReply,
  labels: HeaderLabels,
  on: HeaderSwitches,
  state: PeerState,
): void {
  if (on[labels.limit]) reply.header(labels.limit, state.max);
  if (on[labels.remaining]) reply.header(labels.remaining, state.remaining);
  if (on[labels.reset]) reply.header(labels.reset, state.resetSeconds);
}

/** The headers of a refused request (`addHeaders`): the same three, remaining 0, then `Retry-After` the reset. */
export function writeRefusedHeaders(
  reply: FastifyReply,
  labels: HeaderLabels,
  on: HeaderSwitches,
  state: PeerState,
): void {
  writeAdmittedHeaders(reply, labels, on, { ...state, remaining: 0 });
  if (on[labels.retryAfter]) reply.header(labels.retryAfter, state.resetSeconds);
}
