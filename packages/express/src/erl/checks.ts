import type { ExpressRateLimitLogger } from './types.js';

/**
 * The express-rate-limit checks sluice's layer runs at request time. Each logs once per limiter,
 * through `logger.warn`, and is turned off by `validate: false` or `validate: { name: false }`.
 * Checks of express-rate-limit that sluice does at creation instead (a bad `ipv6Subnet`, `windowMs`,
 * `logger`, `store`) refuse with a coded error and are not in this list.
 */
export const CHECKS = {
  /** The request has no client address: its key falls back to one shared bucket. */
  ip: 'the request has no client address (req.ip); such requests share one key',
  /** `limit` is 0: every request is refused. */
  limit: 'limit is 0: every request is refused (express-rate-limit 7 let them all through)',
  /** `standardHeaders` names no draft sluice knows: no standard headers are sent. */
  headersDraftVersion:
    "standardHeaders is not true, false, 'draft-6', 'draft-7' or 'draft-8': no standard headers are sent",
  /** keyGenerator answered neither a string nor a number: its text (`'undefined'`…) is the key. */
  keyType:
    'keyGenerator answered neither a string nor a number; its text is the key (String(key)), shared by every such request',
  /** The store answered a count that is not a positive integer. */
  positiveHits: 'the store answered a hit count that is not a positive integer',
  /** The store instance is also another limiter's: their counts mix. */
  unsharedStore:
    'the same store instance is used by two limiters; their counts mix (give each its own, or its own prefix)',
} as const;
export type CheckName = keyof typeof CHECKS;

/** The `validate` option: which checks run. Names sluice does not know are accepted (express-rate-limit has more). */
export function checker(
  validate: boolean | Record<string, boolean>,
  logger: ExpressRateLimitLogger,
): (name: CheckName) => void {
  const told = new Set<CheckName>();
  const on = (name: CheckName): boolean => {
    if (validate === false) return false;
    if (validate === true) return true;
    return validate[name] ?? validate.default ?? true;
  };
  return (name) => {
    if (told.has(name) || !on(name)) return;
    told.add(name);
    logger.warn(`sluice (fromExpressRateLimit): ${CHECKS[name]}`);
  };
}

/** express-rate-limit's default logger: the console, message first. */
export const CONSOLE_LOGGER: ExpressRateLimitLogger = {
  error: (error, ...message) => console.error(...message, error),
  warn: (warning, ...message) => console.warn(...message, warning),
};
