import { Logger } from '@nestjs/common';
import type { SluiceWarning } from '@sluice/core';
import { type AdapterDefaults, DEFAULT_LOG_LINES } from '@sluice/core/adapter';

const logger = new Logger('sluice');

/** Nest's `Logger` (context `sluice`) for errors and configuration warnings. */
export const nestDefaults: AdapterDefaults<unknown> = {
  onError(error: Error): void {
    logger.error(`${DEFAULT_LOG_LINES.error}: ${error.message}`, error.stack);
  },
  onWarning(warning: SluiceWarning): void {
    logger.warn(`[${warning.code}] ${warning.message}`);
  },
  onReleaseError(error: unknown): void {
    logger.error(`${DEFAULT_LOG_LINES.releaseError}: ${String(error)}`);
  },
};
