import type { GuardDefaults, SluiceWarning } from '@sluice/core';
import type { Context } from 'koa';

/** Koa has no logger: errors go to `console.error`, configuration warnings to `process.emitWarning`. */
export const koaDefaults: GuardDefaults<Context> = {
  onError(error: Error): void {
    console.error('[sluice] limiter error, request handled by the storeFailure policy:', error);
  },
  onWarning(warning: SluiceWarning): void {
    process.emitWarning(warning.message, { code: warning.code });
  },
  onReleaseError(error: unknown): void {
    console.error('[sluice] a lease release failed in the store; the lease expires after its ttl:', error);
  },
};
