import { ErrorCode, SluiceError } from '@sluice/core';
import { describeValue } from '@sluice/core/adapter';
import type { ClientRateLimitInfo, ExpressRateLimitStore, LegacyExpressRateLimitStore } from './types.js';

const isLegacy = (store: object): store is LegacyExpressRateLimitStore =>
  typeof (store as { incr?: unknown }).incr === 'function' &&
  typeof (store as { increment?: unknown }).increment !== 'function';

/**
 * The `store` option, checked at creation: an express-rate-limit store (its `increment`,
 * `decrement`, `resetKey`, and `init`/`get`/`resetAll`/`shutdown` functions where present), or
 * a legacy callback store, wrapped into the promise contract.
 */
export function storeOption(store: unknown): ExpressRateLimitStore {
  if (store !== null && typeof store === 'object' && isLegacy(store)) return fromCallbacks(store);
  const s = store as Record<string, unknown> | null;
  const required = ['increment', 'decrement', 'resetKey'];
  const optional = ['init', 'get', 'resetAll', 'shutdown'];
  const bad =
    s === null || typeof s !== 'object'
      ? 'store'
      : (required.find((name) => typeof s[name] !== 'function') ??
        optional.find((name) => s[name] !== undefined && typeof s[name] !== 'function'));
  if (bad !== undefined) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `store must be an express-rate-limit store (functions increment, decrement, resetKey; init, get, resetAll, shutdown where present); ${bad === 'store' ? `got ${describeValue(store)}` : `its ${bad} is ${describeValue(s?.[bad])}`}`,
      { option: 'store', value: store },
    );
  }
  return store as ExpressRateLimitStore;
}

function fromCallbacks(legacy: LegacyExpressRateLimitStore): ExpressRateLimitStore {
  return {
    increment: (key) =>
      new Promise<ClientRateLimitInfo>((resolve, reject) => {
        legacy.incr(key, (error, totalHits, resetTime) => {
          if (error) reject(error);
          else resolve({ totalHits, resetTime });
        });
      }),
    decrement: async (key) => legacy.decrement(key),
    resetKey: async (key) => legacy.resetKey(key),
    resetAll: async () => legacy.resetAll?.(),
  };
}
