import type { Algorithm } from '../algorithm.js';
import { parseDuration } from '../duration.js';
import { ErrorCode, SluiceError } from '../errors.js';
import { MemoryStore } from '../memory-store.js';
import { sleep } from '../sleep.js';
import type { Store } from '../store.js';
import {
  assertKnownOptions,
  booleanOption,
  functionOption,
  integerOption,
  oneOfOption,
} from '../validate.js';
import { DecisionHooks } from './decision-hooks.js';
import { HEADER_FORMATS, RateLimitHeaders } from './headers.js';
import { type AddressList, addressList } from './ip.js';
import type { RequestAccess } from './keys.js';
import { LimitSet } from './limit-set.js';
import { type CountWhen, HTTP_OPTIONS, type HttpLimitOptions, type ResponseOutcome } from './options.js';
import { carryPlan } from './plan-carry.js';
import { type AdapterDefaults, Reporter, type RequestAccessBase } from './reporter.js';

/** A rate-limit middleware's options, validated once at creation, defaults applied. */
export interface RateLimitSettings<Req> {
  readonly options: HttpLimitOptions<Req>;
  readonly store: Store;
  readonly set: LimitSet<Req>;
  readonly headers: RateLimitHeaders;
  readonly access: RequestAccess<Req>;
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  readonly allow: AddressList | undefined;
  /** The fixed cost, when `costOf` is undefined. */
  readonly cost: number;
  readonly costOf: ((req: Req) => number | Promise<number>) | undefined;
  /** `count` as a predicate; `undefined`: every response counts. */
  readonly counts: ((req: Req, outcome: ResponseOutcome) => boolean) | undefined;
  readonly failOpen: boolean;
  readonly delayMode: boolean;
  /** ms. */
  readonly maxDelay: number;
  readonly hold: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly reporter: Reporter<Req>;
  readonly hooks: DecisionHooks<Req>;
}

const COUNT_WHEN = ['all', 'failed', 'successful'] as const;
/** `count: 'failed'` keeps the units of a response that failed or never finished. */
const FAILED = (_req: unknown, outcome: ResponseOutcome) => !outcome.finished || outcome.statusCode >= 400;
const SUCCESSFUL = (_req: unknown, outcome: ResponseOutcome) => outcome.finished && outcome.statusCode < 400;

/**
 * Validates a rate-limit middleware's options (each error names the option) and compiles its
 * limits, headers, hooks and reporting.
 * @param where the middleware's name in option errors (`'rateLimit'`, `'@sluice/fastify'`)
 * @param adapterOptions the adapter's own option names, accepted beside the shared ones
 */
export function rateLimitSettings<Req>(
  where: string,
  options: HttpLimitOptions<Req>,
  access: RequestAccessBase<Req>,
  defaults: AdapterDefaults<Req>,
  adapterOptions: readonly string[],
): RateLimitSettings<Req> {
  assertKnownOptions(where, options, [...HTTP_OPTIONS, ...adapterOptions]);
  const delayMode = oneOfOption('onLimit', options.onLimit ?? 'refuse', ['refuse', 'delay']) === 'delay';
  /** A queue asks requests to wait: only the delay mode can hold them. */
  const assertQueueAllowed = (at: string, algorithm: Algorithm): void => {
    if (delayMode || algorithm.kind !== 'leaky-bucket-queue') return;
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${at} uses leakyBucketQueue(), which asks requests to wait; set onLimit: 'delay' so the middleware holds them`,
      { option: 'onLimit', value: options.onLimit },
    );
  };
  const store = options.store ?? new MemoryStore();
  const set = new LimitSet(
    options,
    store,
    (algorithm) => assertQueueAllowed('a plan', algorithm),
    (policy) => (previous, next, key) => carryPlan(store, policy, previous, next, key),
  );
  const headers = new RateLimitHeaders(
    options.headers === false ? false : oneOfOption('headers', options.headers ?? 'ietf', HEADER_FORMATS),
    set.limits,
    booleanOption('shadowHeaders', options.shadowHeaders ?? false),
  );
  const skip = functionOption('skip', options.skip);
  const allow =
    options.allowList === undefined || options.allowList.length === 0
      ? undefined
      : addressList('allowList', options.allowList);
  const costOf = typeof options.cost === 'function' ? options.cost : undefined;
  const cost = typeof options.cost === 'function' ? 1 : integerOption('cost', options.cost ?? 1);
  const counts = countOption(options.count);
  if (counts !== undefined && typeof store.refund !== 'function') {
    // Otherwise every request would count, silently: the units of an uncounted response could not go back.
    throw new SluiceError(
      ErrorCode.UNSUPPORTED,
      `count: ${typeof options.count === 'function' ? 'a function' : JSON.stringify(options.count)} needs a store that gives units back (Store.refund); this store has none`,
      { option: 'count', value: options.count },
    );
  }
  const maxDelay = parseDuration('maxDelay', options.maxDelay ?? '5s');
  set.limits.forEach((limit, i) => {
    if (limit.algorithm !== undefined) assertQueueAllowed(`limits[${i}]`, limit.algorithm);
  });
  const failOpen =
    oneOfOption('storeFailure', options.storeFailure ?? 'allow', ['allow', 'deny']) === 'allow';
  const reporter = new Reporter(options, defaults);
  const hooks = new DecisionHooks(options, set.limits, (error, req: Req) => reporter.error(error, req));
  const hold = functionOption('hold', options.hold) ?? sleep;
  return {
    options,
    store,
    set,
    headers,
    access: reporter.access(access),
    skip,
    allow,
    cost,
    costOf,
    counts,
    failOpen,
    delayMode,
    maxDelay,
    hold,
    reporter,
    hooks,
  };
}

/** `count` as a predicate (`undefined`: every response counts). */
function countOption<Req>(
  count: CountWhen<Req> | undefined,
): ((req: Req, outcome: ResponseOutcome) => boolean) | undefined {
  if (typeof count === 'function') return count;
  const when = oneOfOption('count', count ?? 'all', COUNT_WHEN);
  return when === 'all' ? undefined : when === 'failed' ? FAILED : SUCCESSFUL;
}
