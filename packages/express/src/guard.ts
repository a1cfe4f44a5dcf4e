import { guardLifecycle, type HttpGuard } from '@sluice/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { expressExchange } from './exchange.js';
import type { RefusalHandler } from './refuse.js';

/**
 * The middleware of one compiled guard, over the core guard lifecycle.
 * @param name the middleware's function name, as stack traces and `app._router` show it
 */
export function guardMiddleware(
  guard: HttpGuard<Request>,
  handler: RefusalHandler | undefined,
  name: string,
): RequestHandler {
  const run = guardLifecycle(guard, expressExchange(handler));
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    const result = run({ req, res, next });
    if (result instanceof Promise) result.catch(next);
  };
  return Object.defineProperty(middleware, 'name', { value: name });
}
