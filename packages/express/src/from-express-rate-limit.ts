import {
  byIp,
  type Duration,
  ErrorCode,
  type HeaderFormat,
  SluiceError,
  slidingWindowLog,
} from '@sluice/core';
import { assertKnownOptions, describeValue, integerOption } from '@sluice/core/adapter';
import type { Request, Response } from 'express';
import type { RateLimitOptions } from './rate-limit.js';

/** The express-rate-limit options `fromExpressRateLimit` maps; every other one is refused. */
export interface ExpressRateLimitOptions {
  /** The window, ms. @default 60_000 */
  windowMs?: number;
  /** Requests per window per client, an integer ≥ 1 (functions are not mapped). @default 5 */
  limit?: number;
  /** The old name of `limit`. */
  max?: number;
  /** The client's key, synchronous (`req` only). @default the client address, IPv6 by /56 */
  keyGenerator?: (req: Request) => string;
  /** `true`: not limited. Synchronous. @default never */
  skip?: (req: Request) => boolean;
  /** `'draft-6'`, `'draft-7'`, `'draft-8'` or `true` (draft-6). @default false */
  standardHeaders?: boolean | 'draft-6' | 'draft-7' | 'draft-8';
  /** `X-RateLimit-*`. @default true */
  legacyHeaders?: boolean;
  /** The body of a refusal (sent with `res.send`). @default 'Too many requests, please try again later.' */
  message?: unknown;
  /** The status of a refusal. @default 429 */
  statusCode?: number;
  /** `true`: a store failure lets the request through; `false`: it fails it. @default false */
  passOnStoreError?: boolean;
}

const KNOWN = [
  'windowMs',
  'limit',
  'max',
  'keyGenerator',
  'skip',
  'standardHeaders',
  'legacyHeaders',
  'message',
  'statusCode',
  'passOnStoreError',
] as const satisfies readonly (keyof ExpressRateLimitOptions)[];

/**
 * `rateLimit()` options that behave as express-rate-limit's for the same options, where sluice
 * can: `limit` requests per `windowMs` per client, counted in a sliding window log (never more
 * than `limit` in any `windowMs`: express-rate-limit's window starts at a client's first request,
 * sluice's `fixedWindow` at the epoch, and a sliding log agrees with the first on every trace where
 * a client waits out its window, and is stricter, never looser, where it does not; see
 * docs/migrating-from-express-rate-limit.md), the same key by default (the address, IPv6 by /56),
 * the same refusal (status and `message` via `res.send`), one header format (standard wins over
 * legacy, since sluice sends one), the same store-error policy. Options it cannot map (async key
 * or limit functions, `store`, counting by outcome) are refused with `ERR_SLUICE_UNSUPPORTED`.
 * @example app.use(rateLimit(fromExpressRateLimit({ windowMs: 15 * 60 * 1000, limit: 100 })));
 */
export function fromExpressRateLimit(options: ExpressRateLimitOptions): RateLimitOptions {
  try {
    assertKnownOptions('fromExpressRateLimit', options, KNOWN);
  } catch (error) {
    if (!(error instanceof SluiceError) || error.code !== ErrorCode.UNKNOWN_OPTION) throw error;
    throw new SluiceError(
      ErrorCode.UNSUPPORTED,
      `fromExpressRateLimit does not map express-rate-limit's ${JSON.stringify(error.option)}; write the sluice options by hand (see docs/migrating-from-express-rate-limit.md). Mapped: ${KNOWN.join(', ')}`,
      { option: error.option ?? 'options', value: error.value },
    );
  }
  const window: Duration = integerOption('windowMs', options.windowMs ?? 60_000);
  const limit = integerOption(
    options.limit === undefined ? 'max' : 'limit',
    options.limit ?? options.max ?? 5,
  );
  const statusCode = integerOption('statusCode', options.statusCode ?? 429, 400, 599);
  const message = options.message ?? 'Too many requests, please try again later.';
  const sluice: RateLimitOptions = {
    name: `${limit}-in-${window}ms`,
    algorithm: slidingWindowLog({ limit, window }),
    key: options.keyGenerator === undefined ? byIp({ ipv6Subnet: 56 }) : syncKey(options.keyGenerator),
    headers: headerFormat(options.standardHeaders ?? false, options.legacyHeaders ?? true),
    storeFailure: options.passOnStoreError === true ? 'allow' : 'deny',
    handler: (_req: Request, res: Response) => {
      if (!res.writableEnded) res.status(statusCode).send(message);
    },
  };
  if (options.skip !== undefined) sluice.skip = options.skip;
  return sluice;
}

function headerFormat(
  standard: ExpressRateLimitOptions['standardHeaders'],
  legacy: boolean,
): HeaderFormat | false {
  if (standard === true || standard === 'draft-6') return 'draft-6';
  if (standard === 'draft-7') return 'draft-7';
  if (standard === 'draft-8') return 'ietf';
  if (standard !== false) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `standardHeaders must be true, false, 'draft-6', 'draft-7' or 'draft-8'; got ${describeValue(standard)}`,
      { option: 'standardHeaders', value: standard },
    );
  }
  return legacy ? 'legacy' : false;
}

function syncKey(keyGenerator: (req: Request) => string) {
  if (typeof keyGenerator !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `keyGenerator must be a function; got ${describeValue(keyGenerator)}`,
      {
        option: 'keyGenerator',
        value: keyGenerator,
      },
    );
  }
  return (req: Request): string => {
    const key = keyGenerator(req);
    if (typeof key !== 'string') {
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `keyGenerator must return a string synchronously (sluice keys are synchronous); got ${describeValue(key)}`,
        { option: 'keyGenerator', value: key },
      );
    }
    return key;
  };
}
