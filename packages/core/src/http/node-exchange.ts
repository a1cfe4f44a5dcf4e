import type { ClientResponse } from './client.js';
import { type HttpExchange, whenEnded } from './lifecycle.js';
import { PROBLEM_CONTENT_TYPE, type Refusal } from './problem.js';

/**
 * The Node `ServerResponse` under a framework's own response (Express's `res`, Koa's `ctx.res`,
 * Fastify's `reply.raw`, Nest's on either platform), as the Node exchange uses it.
 */
export interface NodeResponse extends ClientResponse {
  /** 'finish' (sent) and 'close' (the client left first): `whenEnded` listens for both. */
  once(event: 'finish' | 'close', listener: () => void): unknown;
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  getHeader(name: string): unknown;
  end(chunk: string): unknown;
}

/**
 * What an adapter on Node writes of its exchange: its framework's idioms (the request, the
 * headers, the decision on the request, passing on, refusing) and where its Node response is.
 */
export interface NodeExchangeParts<Ctx, Req, R>
  extends Omit<HttpExchange<Ctx, Req, R>, 'client' | 'statusCode' | 'whenDone'> {
  /** The request's Node response: it says when the client left and when the response ended. */
  response(ctx: Ctx): NodeResponse;
}

/**
 * The exchange of an adapter whose framework runs on a Node response: the client, the status and
 * the end of the response are read from the Node response; the rest is the framework's.
 */
export function nodeExchange<Ctx, Req, R>(parts: NodeExchangeParts<Ctx, Req, R>): HttpExchange<Ctx, Req, R> {
  const { response } = parts;
  const exchange: HttpExchange<Ctx, Req, R> = {
    request: parts.request,
    client: response,
    setHeader: parts.setHeader,
    statusCode: (ctx) => response(ctx).statusCode,
    record: parts.record,
    proceed: parts.proceed,
    refuse: parts.refuse,
    whenDone: (ctx, done) => whenEnded(response(ctx), done),
  };
  if (parts.getHeader !== undefined) exchange.getHeader = parts.getHeader;
  return exchange;
}

/**
 * Header access on the Node response itself, for a framework whose response is the Node one
 * (Express): `setHeader`, and `getHeader` (the RateLimit lists an earlier middleware set).
 */
export function nodeResponseHeaders<Ctx>(
  response: (ctx: Ctx) => NodeResponse,
): Required<Pick<HttpExchange<Ctx, unknown, unknown>, 'setHeader' | 'getHeader'>> {
  return {
    setHeader: (ctx, name, value) => {
      response(ctx).setHeader(name, value);
    },
    getHeader: (ctx, name) => stringHeader(response(ctx).getHeader(name)),
  };
}

/** A response header's value as the lifecycle reads it: a string, or none (a number or a list is not a RateLimit list). */
export function stringHeader(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Answers a refusal on a Node response: its status and the RFC 9457 problem body. */
export function writeProblem(res: NodeResponse, refusal: Refusal): void {
  res.statusCode = refusal.status;
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.end(JSON.stringify(refusal.body));
}
