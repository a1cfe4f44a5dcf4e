import type { Decision } from '@sluice/core';
import { functionOption } from '@sluice/core/adapter';
import type { NextFunction, Request, Response } from 'express';

/** A custom answer to a refused request (`handler` of every sluice middleware). */
export type RefusalHandler = (req: Request, res: Response, next: NextFunction, decision: Decision) => void;

/** The `handler` option, checked at creation (a coded error when it is not a function). */
export const handlerOption = (handler: unknown): RefusalHandler | undefined =>
  functionOption('handler', handler as RefusalHandler | undefined);
