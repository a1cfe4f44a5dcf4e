import type { GuardDefaults, SluiceWarning } from '@sluice/core';
import type { Context } from 'hono';

/** Hono has no logger and runs where `process` may not exist: both hooks write to the console. */
export const honoDefaults: GuardDefaults<Context> = {
  onError(error: Error): void {
    console.error('[sluice] limiter error, request handled by the storeFailure policy:', error);
  },
  onWarning(warning: SluiceWarning): void {
    console.warn(`[${warning.code}] ${warning.message}`);
  },
  onReleaseError(error: unknown): void {
    console.error('[sluice] a lease release failed in the store; the lease expires after its ttl:', error);
  },
};
