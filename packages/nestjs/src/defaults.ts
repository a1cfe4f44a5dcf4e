import { Logger } from '@nestjs/common';
import type { SluiceWarning } from '@sluice/core';
import { type AdapterDefaults, DEFAULT_LOG_LINES, fewErrorLines, releaseLines } from '@sluice/core/adapter';

const logger = new Logger('sluice');

/** Nest's `Logger` (context `sluice`) for errors and configuration warnings. */
export const nestDefaults: AdapterDefaults<unknown> = {
  // A few lines, not one per request (`fewErrorLines`), for every sluice guard of the process.
  onError: fewErrorLines({
    error(error: Error): void {
      logger.error(`${DEFAULT_LOG_LINES.error}: ${error.message}`, error.stack);
    },
    line(text: string): void {
      logger.error(text);
    },
  }),
  onWarning(warning: SluiceWarning): void {
    logger.warn(`[${warning.code}] ${warning.message}`);
  },
  onReleaseError: releaseLines({
    error(error: Error): void {
      logger.error(`${DEFAULT_LOG_LINES.releaseError}: ${error.message}`, error.stack);
    },
    line(text: string): void {
      logger.error(text);
    },
  }),
};
