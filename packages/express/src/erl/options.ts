import { ErrorCode, SluiceError } from '@sluice/core';
import {
  assertKnownOptions,
  booleanOption,
  describeValue,
  functionOption,
  integerOption,
} from '@sluice/core/adapter';
import type { Request, Response } from 'express';
import { type CheckName, CONSOLE_LOGGER, checker } from './checks.js';
import { quotaName } from './headers.js';
import { ipKey } from './ip-key.js';
import { FirstHitMemoryStore } from './memory-store.js';
import { storeOption } from './store.js';
import type {
  ExpressRateLimitLogger,
  ExpressRateLimitOptions,
  ExpressRateLimitStore,
  ResolvedExpressRateLimitOptions,
} from './types.js';

/** Every option of express-rate-limit 8, checked by the compiler against the options type. */
const KNOWN = [
  'windowMs',
  'limit',
  'max',
  'message',
  'statusCode',
  'handler',
  'legacyHeaders',
  'headers',
  'standardHeaders',
  'identifier',
  'requestPropertyName',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'keyGenerator',
  'ipv6Subnet',
  'skip',
  'requestWasSuccessful',
  'store',
  'validate',
  'passOnStoreError',
  'logger',
] as const satisfies readonly (keyof ExpressRateLimitOptions)[];
// The other direction: an option added to the type but not to KNOWN fails to compile here.
type AllKnown = Exclude<keyof ExpressRateLimitOptions, (typeof KNOWN)[number]> extends never ? true : never;
const allKnown: AllKnown = true;

/** Options express-rate-limit 8 tolerates but does not honour: refused, so that nothing is ignored in silence. */
const REMOVED: Record<string, string> = {
  onLimitReached: 'express-rate-limit 7 removed it and 8 ignores it; use handler',
  draft_polli_ratelimit_headers:
    "express-rate-limit 7 removed it and 8 ignores it; use standardHeaders: 'draft-6'",
  delayAfter: "it belongs to express-slow-down; use sluice's delay mode",
  delayMs: "it belongs to express-slow-down; use sluice's delay mode",
  maxDelayMs: "it belongs to express-slow-down; use sluice's delay mode",
};

/**
 * express-rate-limit's options resolved once, at creation, as express-rate-limit resolves them
 * (an option given as `undefined` is left out, `limit` wins over `max`, `headers` is
 * `legacyHeaders`), each checked: a value sluice would fail on under traffic is refused now with
 * a coded error naming the option.
 */
export function resolveOptions(
  given: ExpressRateLimitOptions | undefined,
  handler: ResolvedExpressRateLimitOptions['handler'],
): {
  options: ResolvedExpressRateLimitOptions;
  store: ExpressRateLimitStore;
  check: (name: CheckName) => void;
} {
  void allKnown;
  const options = definedOnly(given ?? {});
  for (const name of Object.keys(options)) {
    const reason = REMOVED[name];
    if (reason !== undefined) {
      throw new SluiceError(ErrorCode.UNSUPPORTED, `fromExpressRateLimit refuses ${name}: ${reason}`, {
        option: name,
        value: options[name as keyof ExpressRateLimitOptions],
      });
    }
  }
  assertKnownOptions('fromExpressRateLimit', options, KNOWN);
  const windowMs = integerOption('windowMs', options.windowMs ?? 60_000, 1, 2 ** 31 - 1);
  const limitName = options.limit === undefined ? 'max' : 'limit';
  const limit = options.limit ?? options.max ?? 5;
  if (typeof limit !== 'function') integerOption(limitName, limit, 0);
  const logger = loggerOption(options.logger);
  const standardHeaders = options.standardHeaders === true ? 'draft-6' : (options.standardHeaders ?? false);
  if (typeof standardHeaders !== 'string' && standardHeaders !== false) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `standardHeaders must be true, false, 'draft-6', 'draft-7' or 'draft-8'; got ${describeValue(standardHeaders)}`,
      { option: 'standardHeaders', value: standardHeaders },
    );
  }
  const validate = validateOption(options.validate ?? true);
  const check = checker(validate, logger);
  const ipv6Subnet = ipv6SubnetOption(options.ipv6Subnet ?? 56);
  const keyGenerator =
    functionOption('keyGenerator', options.keyGenerator) ?? ipKey(ipv6Subnet, () => check('ip'));
  const requestPropertyName = options.requestPropertyName ?? 'rateLimit';
  if (typeof requestPropertyName !== 'string' || requestPropertyName === '') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `requestPropertyName must be a non-empty string; got ${describeValue(requestPropertyName)}`,
      { option: 'requestPropertyName', value: requestPropertyName },
    );
  }
  const store = options.store === undefined ? new FirstHitMemoryStore() : storeOption(options.store);
  const resolved = {
    ...options,
    windowMs,
    limit,
    message: options.message ?? 'Too many requests, please try again later.',
    statusCode: integerOption('statusCode', options.statusCode ?? 429, 100, 999),
    handler: functionOption('handler', options.handler) ?? handler,
    legacyHeaders: booleanOption(
      'legacyHeaders',
      options.legacyHeaders ?? booleanOption('headers', options.headers ?? true),
    ),
    standardHeaders,
    identifier:
      stringOrFunction('identifier', options.identifier) ??
      ((req: Request) =>
        quotaName(
          (req as unknown as Record<string, { limit: number }>)[requestPropertyName]!.limit,
          windowMs,
        )),
    requestPropertyName,
    skipFailedRequests: booleanOption('skipFailedRequests', options.skipFailedRequests ?? false),
    skipSuccessfulRequests: booleanOption('skipSuccessfulRequests', options.skipSuccessfulRequests ?? false),
    keyGenerator,
    ipv6Subnet,
    skip: functionOption('skip', options.skip) ?? (() => false),
    requestWasSuccessful:
      functionOption('requestWasSuccessful', options.requestWasSuccessful) ??
      ((_req: Request, res: Response) => res.statusCode < 400),
    store,
    validate,
    passOnStoreError: booleanOption('passOnStoreError', options.passOnStoreError ?? false),
    logger,
  } as ResolvedExpressRateLimitOptions;
  return { options: resolved, store, check };
}

/** express-rate-limit drops options given as `undefined` (`{ store: undefined }` is `{}`); the caller's object is not touched. */
function definedOnly(options: ExpressRateLimitOptions): ExpressRateLimitOptions {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `fromExpressRateLimit options must be an object or undefined; got ${describeValue(options)}`,
      { option: 'options', value: options },
    );
  }
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

function loggerOption(logger: unknown): ExpressRateLimitLogger {
  if (logger === undefined) return CONSOLE_LOGGER;
  const l = logger as Partial<ExpressRateLimitLogger> | null;
  if (l === null || typeof l !== 'object' || typeof l.error !== 'function' || typeof l.warn !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `logger must be an object with error and warn functions; got ${describeValue(logger)}`,
      { option: 'logger', value: logger },
    );
  }
  return l as ExpressRateLimitLogger;
}

function ipv6SubnetOption(subnet: unknown): ExpressRateLimitOptions['ipv6Subnet'] {
  if (subnet === false || typeof subnet === 'function')
    return subnet as ExpressRateLimitOptions['ipv6Subnet'];
  if (typeof subnet === 'number' && Number.isInteger(subnet) && subnet >= 32 && subnet <= 64) return subnet;
  throw new SluiceError(
    ErrorCode.INVALID_OPTION,
    `ipv6Subnet must be an integer from 32 to 64, false, or a function; got ${describeValue(subnet)}`,
    { option: 'ipv6Subnet', value: subnet },
  );
}

function stringOrFunction<T>(option: string, value: T): T {
  if (value === undefined || typeof value === 'string' || typeof value === 'function') return value;
  throw new SluiceError(
    ErrorCode.INVALID_OPTION,
    `${option} must be a string or a function; got ${describeValue(value)}`,
    { option, value },
  );
}

function validateOption(validate: unknown): boolean | Record<string, boolean> {
  if (typeof validate === 'boolean') return validate;
  if (validate !== null && typeof validate === 'object') {
    const entries = Object.entries(validate);
    if (entries.every(([, on]) => typeof on === 'boolean')) return validate as Record<string, boolean>;
  }
  throw new SluiceError(
    ErrorCode.INVALID_OPTION,
    `validate must be a boolean or an object of booleans (check name → on); got ${describeValue(validate)}`,
    { option: 'validate', value: validate },
  );
}
