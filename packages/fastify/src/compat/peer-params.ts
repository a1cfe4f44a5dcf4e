import { ErrorCode, SluiceError } from '@sluice/core';
import { describeValue } from '@sluice/core/adapter';
import type { FastifyRequest } from 'fastify';
import type {
  ErrorResponseContext,
  FastifyRateLimitOptions,
  FastifyRateLimitRouteOptions,
  HeaderSwitches,
  PeerHook,
  PerRequest,
} from './options.js';
import { formatPeerDuration, parsePeerDuration } from './peer-duration.js';
import { type HeaderLabels, headerLabels, headerSwitches } from './peer-headers.js';
import { ipv6SubnetOf } from './peer-key.js';

/** @fastify/rate-limit's defaults: 1000 requests a minute. */
export const DEFAULT_MAX = 1000;
export const DEFAULT_TIME_WINDOW = 60_000;

const HOOKS = ['onRequest', 'preValidation', 'preHandler'] as const satisfies readonly PeerHook[];

/** One limit's options, resolved once: what the hooks and `createRateLimit` run on. */
export interface PeerParams {
  readonly max: PerRequest<number>;
  readonly timeWindow: PerRequest<number>;
  readonly keyGenerator: FastifyRateLimitRouteOptions['keyGenerator'];
  readonly ipv6Subnet: number;
  readonly allowList: FastifyRateLimitRouteOptions['allowList'];
  /** Refusals past which a key is answered 403; -1: never. */
  readonly ban: number;
  readonly hook: PeerHook;
  readonly continueExceeding: boolean;
  readonly exponentialBackoff: boolean;
  readonly groupId: string | undefined;
  readonly errorResponseBuilder: (request: FastifyRequest, context: ErrorResponseContext) => unknown;
  readonly labels: HeaderLabels;
  readonly addHeaders: HeaderSwitches;
  readonly addHeadersOnExceeding: HeaderSwitches;
  readonly onExceeding: (request: FastifyRequest, key: string) => void;
  readonly onExceeded: (request: FastifyRequest, key: string) => void;
  readonly onBanReach: (request: FastifyRequest, key: string) => void;
  readonly skipOnError: boolean;
}

const nothing = (): void => {};

/** The refusal @fastify/rate-limit throws by default: an Error whose `statusCode` Fastify answers with. */
function defaultErrorResponse(_request: FastifyRequest, context: ErrorResponseContext): Error {
  const error = new Error(`Rate limit exceeded, retry in ${context.after}`) as Error & { statusCode: number };
  error.statusCode = context.statusCode;
  return error;
}

/**
 * `max` as @fastify/rate-limit reads it: a finite number ≥ 0 (truncated) or a function; anything
 * else (NaN, -5, '10') falls back to 1000, as there.
 */
function maxOf(value: unknown): PerRequest<number> {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.trunc(value);
  if (typeof value === 'function') return value as PerRequest<number>;
  return DEFAULT_MAX;
}

/**
 * `timeWindow` as @fastify/rate-limit reads it: a finite number ≥ 0 (truncated), a string in
 * @lukeed/ms's words, a function; anything else (NaN, -5) falls back to a minute. A string it
 * cannot read fails every request there; here it is refused at creation.
 */
function timeWindowOf(where: string, value: unknown): PerRequest<number> {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.trunc(value);
  if (typeof value === 'string') {
    const ms = parsePeerDuration(value);
    if (ms === undefined || ms < 0) {
      throw new SluiceError(
        ErrorCode.INVALID_DURATION,
        `${where}: timeWindow ${describeValue(value)} cannot be read; give ms, or a number and a unit ('1 minute', '30s', '2 hours')`,
        { option: 'timeWindow', value },
      );
    }
    return ms;
  }
  if (typeof value === 'function') return value as PerRequest<number>;
  return DEFAULT_TIME_WINDOW;
}

function hookOf(where: string, value: unknown): PeerHook {
  if (value === undefined || value === null || value === '') return 'onRequest';
  if ((HOOKS as readonly unknown[]).includes(value)) return value as PeerHook;
  throw new SluiceError(
    value === 'preParsing' ? ErrorCode.UNSUPPORTED : ErrorCode.INVALID_OPTION,
    `${where}: hook ${describeValue(value)} is not supported; use ${HOOKS.map((hook) => `'${hook}'`).join(', ')}${
      value === 'preParsing'
        ? " (preParsing hooks take the payload stream, which sluice's hook does not)"
        : ''
    }`,
    { option: 'hook', value },
  );
}

function functionOr<F>(value: unknown, fallback: F): F {
  return typeof value === 'function' ? (value as F) : fallback;
}

/** The plugin's options resolved, as @fastify/rate-limit resolves its `globalParams`. */
export function pluginParams(options: FastifyRateLimitOptions): PeerParams {
  const where = 'fromFastifyRateLimit';
  const draft = options.enableDraftSpec === true;
  const labels = headerLabels(draft);
  return resolve(where, {
    ...options,
    labels,
    addHeaders: headerSwitches(labels, options.addHeaders, true),
    addHeadersOnExceeding: headerSwitches(labels, options.addHeadersOnExceeding, false),
  });
}

/**
 * A route's or a decorator's options over the plugin's, as @fastify/rate-limit merges them:
 * every option given wins, whole (an `addHeaders` object replaces the plugin's, so a header it
 * does not name is not sent), and `max`, `timeWindow`, `ban` are read again with their fallbacks.
 */
export function mergedParams(where: string, plugin: PeerParams, own: Record<string, unknown>): PeerParams {
  if (own.groupId !== undefined && typeof own.groupId !== 'string') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${where}: groupId must be a string; got ${describeValue(own.groupId)}`,
      {
        option: 'groupId',
        value: own.groupId,
      },
    );
  }
  return resolve(where, { ...plugin, ...own });
}

function resolve(where: string, raw: Record<string, unknown>): PeerParams {
  const ban = raw.ban;
  return {
    max: maxOf(raw.max),
    timeWindow: timeWindowOf(where, raw.timeWindow),
    keyGenerator: functionOr(raw.keyGenerator, undefined),
    ipv6Subnet: ipv6SubnetOf(raw.ipv6Subnet),
    allowList: (raw.allowList ?? undefined) as PeerParams['allowList'],
    ban: typeof ban === 'number' && Number.isFinite(ban) && ban >= 0 ? Math.trunc(ban) : -1,
    hook: hookOf(where, raw.hook),
    continueExceeding: raw.continueExceeding === true,
    exponentialBackoff: raw.exponentialBackoff === true,
    groupId: raw.groupId as string | undefined,
    errorResponseBuilder: functionOr(raw.errorResponseBuilder, defaultErrorResponse),
    labels: raw.labels as HeaderLabels,
    addHeaders: (raw.addHeaders ?? {}) as HeaderSwitches,
    addHeadersOnExceeding: (raw.addHeadersOnExceeding ?? {}) as HeaderSwitches,
    onExceeding: functionOr(raw.onExceeding, nothing),
    onExceeded: functionOr(raw.onExceeded, nothing),
    onBanReach: functionOr(raw.onBanReach, nothing),
    skipOnError: raw.skipOnError === true,
  };
}

/** "retry in …" of a refusal, from the seconds sent in `Retry-After`. */
export function retryWords(seconds: number): string {
  return formatPeerDuration(seconds * 1000);
}
