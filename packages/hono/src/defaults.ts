import type { SluiceWarning } from '@sluice/core';
import { type AdapterDefaults, CONSOLE_DEFAULTS } from '@sluice/core/adapter';
import type { Context } from 'hono';

/** Hono has no logger and runs where `process` may not exist: warnings go to the console too. */
export const honoDefaults: AdapterDefaults<Context> = {
  ...CONSOLE_DEFAULTS,
  onWarning(warning: SluiceWarning): void {
    console.warn(`[${warning.code}] ${warning.message}`);
  },
};
