import type { RequestAccessBase } from '@sluice/core/adapter';
import { expressRequestAccess } from '@sluice/core/adapter';
import type { Request } from 'express';

/**
 * What sluice's keys read from an Express request (4 and 5): `req.ip` under the app's `trust
 * proxy`, the matched route's path, the headers. Written once in core, where `@sluice/nestjs` on
 * Express reads requests the same way.
 */
export const expressAccess: RequestAccessBase<Request> = expressRequestAccess;
