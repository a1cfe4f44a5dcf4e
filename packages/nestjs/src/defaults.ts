import { Logger } from '@nestjs/common';
import type { SluiceWarning } from '@sluice/core';
import type { AdapterDefaults } from '@sluice/core/adapter';

const logger = new Logger('sluice');

/** Nest's `Logger` (context `sluice`) for errors and configuration warnings. */
export const nestDefaults: AdapterDefaults<unknown> = {
  onError(error: Error): void {
    logger.error(`limiter error, request handled by the storeFailure policy: ${error.message}`, error.stack);
  },
  onWarning(warning: SluiceWarning): void {
    logger.warn(`[${warning.code}] ${warning.message}`);
  },
  onReleaseError(error: unknown): void {
    logger.error(`a lease release failed in the store; the lease expires after its ttl: ${String(error)}`);
  },
};
