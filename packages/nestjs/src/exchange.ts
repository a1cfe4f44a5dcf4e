import type { ExecutionContext } from '@nestjs/common';
import { ErrorCode, SluiceError } from '@sluice/core';
import {
  type HttpExchange,
  type Lifecycle,
  type NodeResponse,
  nodeExchange,
  PROBLEM_CONTENT_TYPE,
  stringHeader,
} from '@sluice/core/adapter';
import { RateLimitException } from './exception.js';
import type { NestRequest } from './request.js';

/**
 * The response as a Nest guard gets it, on either platform: Express's `Response` (itself the Node
 * response) or Fastify's `FastifyReply` (the Node response as `raw`). Both set a header with
 * `header(name, value)` and read one with `getHeader(name)`, as @nestjs/throttler writes them.
 */
interface NestResponse {
  header(name: string, value: string): unknown;
  getHeader(name: string): unknown;
  readonly statusCode: number;
  /** Fastify's Node response; absent on Express, whose response is the Node one. */
  readonly raw?: NodeResponse;
}

const response = (context: ExecutionContext): NestResponse =>
  context.switchToHttp().getResponse<NestResponse>();
/** The Node response, which says when the response ended or the client left. */
const node = (res: NestResponse): NodeResponse => res.raw ?? (res as unknown as NodeResponse);

/** The Nest glue of the core lifecycle, on Express or Fastify: headers on the response, `true`, the exception. */
export const nestExchange: HttpExchange<ExecutionContext, NestRequest, boolean> = nodeExchange<
  ExecutionContext,
  NestRequest,
  boolean
>({
  request: (context) => context.switchToHttp().getRequest<NestRequest>(),
  response: (context) => node(response(context)),
  setHeader: (context, name, value) => {
    response(context).header(name, value);
  },
  // The global guard's RateLimit lists, which a class's or method's @RateLimit extends.
  getHeader: (context, name) => stringHeader(response(context).getHeader(name)),
  record: (context, decision) => {
    context.switchToHttp().getRequest<NestRequest>().rateLimit = decision;
  },
  proceed: () => true,
  refuse: (context, decision, refusal) => {
    // Nest's filter keeps a +json type it finds (both platforms), so the default reply is sluice's problem body.
    response(context).header('Content-Type', PROBLEM_CONTENT_TYPE);
    throw new RateLimitException(decision, refusal.body, refusal.status);
  },
});

/**
 * Refuses a context sluice cannot serve (GraphQL, WebSockets, microservices), with what to do.
 * Nest gives a guard no start-up hook that tells which handlers it will guard, so this is the first
 * call's; every later call of such a context is refused the same way (let through, its handlers
 * would be unlimited in silence).
 * @param where the guard's class name
 * @param remedy what the app should do instead
 */
export function assertHttp(context: ExecutionContext, where: string, remedy: string): void {
  const type = context.getType<string>();
  if (type === 'http') return;
  const handler = `${context.getClass().name}.${context.getHandler().name}`;
  throw new SluiceError(
    ErrorCode.UNSUPPORTED,
    `${where} limits HTTP requests (Nest on Express or Fastify) and ran for a '${type}' context (${handler}), whose client it cannot read nor answer; ${remedy}`,
    { option: where, value: type },
  );
}

/**
 * `canActivate` over lifecycles run one after another: a request passes when each passes; one
 * whose client left (`undefined`) is stopped with `false` (nothing is sent to it).
 */
export function activate(
  lifecycles: readonly Lifecycle<ExecutionContext, boolean>[],
  context: ExecutionContext,
  from = 0,
): boolean | Promise<boolean> {
  for (let i = from; i < lifecycles.length; i++) {
    const result = lifecycles[i]!(context);
    if (result instanceof Promise) {
      return result.then((passed) => passed === true && activate(lifecycles, context, i + 1));
    }
    if (result !== true) return false;
  }
  return true;
}
