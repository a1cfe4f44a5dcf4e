import { clientLeft, type HttpGuard, type Lease, releaseWhenDone } from '@sluice/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { type RefusalHandler, refuse } from './refuse.js';

/**
 * The middleware of one compiled guard: the lease is taken when the request arrives and given
 * back exactly once when the response ends, however it ends (`Lease.release` is idempotent).
 * A refused request is answered here and never reaches the app.
 * @param name the middleware's function name, as stack traces and `app._router` show it
 */
export function guardMiddleware(
  guard: HttpGuard<Request>,
  handler: RefusalHandler | undefined,
  name: string,
): RequestHandler {
  const admit = (req: Request, res: Response, next: NextFunction, lease: Lease | undefined) => {
    if (lease === undefined) return next();
    const decision = lease.decision;
    if (decision.allowed) {
      if (guard.holdsLeases) releaseWhenDone(res, lease);
      return next();
    }
    guard.limited(req, decision);
    refuse(req, res, next, decision, guard.refusal(decision), handler);
  };

  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    // Gone before it got here: no lease for a request nobody will read.
    if (clientLeft(res)) return;
    const result = guard.enter(req);
    if (!(result instanceof Promise)) {
      admit(req, res, next, result);
      return;
    }
    // The client may leave while the store answers; its lease must not outlive it.
    let gone = false;
    const leave = () => {
      gone = true;
    };
    res.once('close', leave);
    result
      .then((lease) => {
        res.removeListener('close', leave);
        if (gone) void lease?.release();
        else admit(req, res, next, lease);
      })
      .catch(next);
  };
  return Object.defineProperty(middleware, 'name', { value: name });
}
