import { type Decision, ErrorCode, PROBLEM_JSON, type Refusal, SluiceError } from '@sluice/core';
import type { NextFunction, Request, Response } from 'express';

/** A custom answer to a refused request (`handler` of every sluice middleware). */
export type RefusalHandler = (req: Request, res: Response, next: NextFunction, decision: Decision) => void;

export function handlerOption(handler: unknown): RefusalHandler | undefined {
  if (handler !== undefined && typeof handler !== 'function') {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'handler must be a function', {
      option: 'handler',
      value: handler,
    });
  }
  return handler as RefusalHandler | undefined;
}

/** Sends a refusal: `Retry-After`, then the user's handler or the RFC 9457 problem body. */
export function refuse(
  req: Request,
  res: Response,
  next: NextFunction,
  decision: Decision,
  refusal: Refusal,
  handler: RefusalHandler | undefined,
): void {
  if (refusal.retryAfter !== undefined) res.setHeader('Retry-After', String(refusal.retryAfter));
  if (handler !== undefined) {
    handler(req, res, next, decision);
    return;
  }
  res.statusCode = refusal.status;
  res.setHeader('Content-Type', `${PROBLEM_JSON}; charset=utf-8`);
  res.end(JSON.stringify(refusal.body));
}
