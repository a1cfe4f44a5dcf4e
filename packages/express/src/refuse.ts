import { type Decision, ErrorCode, SluiceError } from '@sluice/core';
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
