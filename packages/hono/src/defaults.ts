import type { SluiceWarning } from '@sluice/core';
import { type AdapterDefaults, CONSOLE_DEFAULTS, type MiddlewareAdapter } from '@sluice/core/adapter';
import type { Context } from 'hono';
import { ACCESS_OPTIONS, type HonoAccessOptions, honoAccess } from './access.js';

/** Hono has no logger and runs where `process` may not exist: warnings go to the console too. */
export const honoDefaults: AdapterDefaults<Context> = {
  ...CONSOLE_DEFAULTS,
  onWarning(warning: SluiceWarning): void {
    console.warn(`[${warning.code}] ${warning.message}`);
  },
};

/**
 * What a Hono middleware of sluice reads requests with, reports to, and accepts of its own: the
 * address options of a middleware whose keys read the client address (`rateLimit`,
 * `concurrencyLimit`); none for the shedders, which read no address.
 */
export function honoAdapter(access: HonoAccessOptions | undefined): MiddlewareAdapter<Context> {
  if (access === undefined) return { access: honoAccess({}), defaults: honoDefaults, options: ['handler'] };
  return { access: honoAccess(access), defaults: honoDefaults, options: ['handler', ...ACCESS_OPTIONS] };
}
