import type { GuardName } from './guards.js';

/** The function name of every rate-limit middleware and hook, as stack traces show it. */
export const RATE_LIMIT_FUNCTION_NAME = 'sluiceRateLimit';

/** A guard middleware's function name, as stack traces show it: `sluiceFleetShed`. */
export function guardFunctionName(name: GuardName): string {
  return `sluice${name[0]!.toUpperCase()}${name.slice(1)}`;
}

/** Names a middleware function, as stack traces and the framework's route listings show it. */
export function named<F extends object>(middleware: F, name: string): F {
  return Object.defineProperty(middleware, 'name', { value: name });
}
