import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import Router from '@koa/router';
import type { ArgumentsHost, ExceptionFilter } from '@nestjs/common';
import {
  type CanActivate,
  Catch,
  Controller,
  Get,
  HttpCode,
  type INestApplication,
  Module,
  Post,
  Req,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Decision, RateLimitControl, Store } from '@sluice/core';
import {
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpLimitOptions,
  type HttpUtilizationShedOptions,
  refusalStatus,
} from '@sluice/core/adapter';
import { concurrencyLimit, fleetShed, rateLimit, utilizationShed } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import * as sluiceHono from '@sluice/hono';
import * as sluiceKoa from '@sluice/koa';
import * as sluiceNest from '@sluice/nestjs';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import express5 from 'express';
import express4 from 'express4';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Hono, type Context as HonoContext } from 'hono';
import Koa, { type Context as KoaContext, type Middleware as KoaMiddleware } from 'koa';
import supertest from 'supertest';

/** Options written once for both adapters: keys use the access argument, never the framework's request. */
export type Options = HttpLimitOptions<unknown>;

/** The guards, written once for both adapters (keys and priorities read only headers). */
export interface Guards {
  concurrencyLimit?: HttpConcurrencyOptions<unknown> | false;
  fleetShed?: HttpFleetShedOptions<unknown> | false;
  utilizationShed?: HttpUtilizationShedOptions<unknown> | false;
}

/** The guards in the order both adapters run them: shedders, then the concurrency limit. */
export const GUARD_ORDER = ['utilizationShed', 'fleetShed', 'concurrencyLimit'] as const;

/**
 * What the app's handlers did, and a gate the `'wait'` handlers block on until `open()`: a
 * request held in flight for as long as the test wants, with no timer.
 */
export class Probe {
  /** Paths whose handler ran, in order. */
  readonly handled: string[] = [];
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.opened = resolve;
  });

  /**
   * Runs a handler of `kind`; answers the fields it adds to the JSON body. The app-code kinds call
   * the middleware's `RateLimitControl` (`control`) on the framework's request `req`.
   */
  async run(
    path: string,
    kind: RouteSpec['handler'],
    control?: Control,
    req?: unknown,
    header?: (name: string) => string | undefined,
  ): Promise<Record<string, unknown>> {
    this.handled.push(path);
    if (kind === 'throw') throw new Error('handler failed');
    if (kind === 'wait') await this.gate;
    if (kind === 'settle') await control!.settle(req, Number(header!('x-actual')));
    if (kind === 'peek') return { peeked: (await control!.peek(req))?.remaining ?? null };
    if (kind === 'reset') await control!.reset(req);
    return {};
  }

  open(): void {
    this.opened();
  }
}

/** A middleware's app-code methods, whatever its request type. */
export type Control = RateLimitControl<unknown>;

export interface RouteSpec {
  method: 'GET' | 'POST';
  path: string;
  /**
   * What the handler does: answer at once (default), throw (a 500), wait for `probe.open()`, or
   * call the limits' app-code method (the route's own middleware's, else the app-wide one's):
   * `settle` to the `X-Actual` header, `peek` (answered as `peeked`), `reset` its keys.
   */
  handler?: 'ok' | 'throw' | 'wait' | 'settle' | 'peek' | 'reset';
  /** Express: per-route guard middlewares. Fastify: `config.<guard>` (`false` exempts). */
  guards?: Guards;
  /** Express: a per-route middleware. Fastify: `config.rateLimit` (merged with the global options). */
  limit?: Options | false;
  /** Fastify only: `onRequest: app.rateLimit(decorator)`. */
  decorator?: Options;
}

export interface AppSpec {
  /** Global limits: `app.use(rateLimit(options))` / `app.register(sluice, options)`. */
  options?: Options;
  /** Global guards, before the global limits: `app.use(...)` / the plugin's guard options. */
  guards?: Guards;
  /** Records handler runs and holds `'wait'` handlers. */
  probe?: Probe;
  routes: RouteSpec[];
  /** The framework's trust-proxy setting. */
  trustProxy?: boolean | string;
  /** Replace the problem body with `{ custom: true, policy }`. */
  customHandler?: boolean;
}

export interface Reply {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
}

export interface TestApp {
  request(method: 'GET' | 'HEAD' | 'POST', path: string, headers?: Record<string, string>): Promise<Reply>;
  /**
   * One request to the app's Node server over a Unix domain socket, where the connection has no
   * client address (`remoteAddress` is undefined), as behind a proxy that reaches the app so.
   */
  requestOverUnixSocket(
    method: 'GET' | 'POST',
    path: string,
    headers?: Record<string, string>,
  ): Promise<Reply>;
  /** Starts a real HTTP server on a free loopback port; returns its base URL. */
  listen(): Promise<string>;
  /** Open connections of the server `listen()` started, as the server counts them. */
  connections(): Promise<number>;
  /** `reset(key)` of the app-wide limits, from the app's code. */
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

export interface Subject {
  name: string;
  /** Fastify's per-route config adds to, overrides and exempts from the global limits. */
  routeConfig: boolean;
  build(spec: AppSpec): Promise<TestApp>;
  /** Creates the adapter with these options; rejects with the creation error. */
  create(options: unknown): Promise<void>;
  /** Creates one guard with these options; rejects with the creation error. */
  createGuard(name: (typeof GUARD_ORDER)[number], options: unknown): Promise<void>;
}

/**
 * The behaviour suite's app, store and fake clock, for the suites nested in it: each test gets a
 * fresh store and the clock at 0, and its app is closed after it.
 */
export interface SuiteFixture {
  build(spec: AppSpec): Promise<TestApp>;
  app(): TestApp;
  store(): Store;
  setNow(ms: number): void;
}

/** Makes a store; the behaviour suite passes its fake clock (ms since the epoch). */
export type StoreFactory = (clock: () => number) => Store | Promise<Store>;

function normalise(headers: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name.toLowerCase()] =
      value === undefined ? undefined : Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.getConnections((error, count) => (error ? reject(error) : resolve(count)));
  });
}

type ExpressFactory = () => Express;

const expressGuards = { concurrencyLimit, fleetShed, utilizationShed } as const;

function expressSubject(name: string, create: ExpressFactory): Subject {
  return {
    name,
    routeConfig: false,
    async create(options) {
      rateLimit(options as Options);
    },
    async createGuard(name, options) {
      expressGuards[name](options as never);
    },
    async build(spec) {
      const app = create();
      const probe = spec.probe ?? new Probe();
      if (spec.trustProxy !== undefined) app.set('trust proxy', spec.trustProxy);
      const withHandler = (options: Options) =>
        spec.customHandler
          ? {
              ...options,
              handler: (_req: Request, res: Response, _next: NextFunction, decision: Decision) => {
                res.status(refusalStatus(decision)).json({ custom: true, policy: decision.policy });
              },
            }
          : options;
      const guards = (given: Guards | undefined): RequestHandler[] =>
        GUARD_ORDER.flatMap((name) => {
          const options = given?.[name];
          return options ? [expressGuards[name](withHandler(options as Options) as never)] : [];
        });
      for (const guard of guards(spec.guards)) app.use(guard);
      const global = spec.options === undefined ? undefined : rateLimit(withHandler(spec.options));
      if (global !== undefined) app.use(global);
      for (const route of spec.routes) {
        const own = route.limit ? rateLimit(withHandler(route.limit)) : undefined;
        const handlers = [...guards(route.guards), ...(own ? [own] : [])];
        const method = route.method === 'GET' ? 'get' : 'post';
        app[method](route.path, ...handlers, (req: Request, res: Response, next: NextFunction) => {
          // Express 4 does not catch rejected promises: pass the error on by hand.
          probe
            .run(route.path, route.handler, (own ?? global) as Control | undefined, req, (name) =>
              req.get(name),
            )
            .then(
              (extra) => res.json({ ok: true, remaining: req.rateLimit?.remaining ?? null, ...extra }),
              next,
            );
        });
      }
      app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
        res.status(500).json({ error: error.message });
      });
      let server: Server | undefined;
      // A server that never listens: the Unix socket relay hands it its connections.
      let unixServer: Server | undefined;
      return {
        requestOverUnixSocket(method, path, headers = {}) {
          unixServer ??= createServer(app);
          return overUnixSocket(unixServer, method, path, headers);
        },
        async request(method, path, headers = {}) {
          const agent = supertest(app);
          const response = await (method === 'GET'
            ? agent.get(path)
            : method === 'HEAD'
              ? agent.head(path)
              : agent.post(path)
          ).set(headers);
          return {
            status: response.status,
            headers: normalise(response.headers as Record<string, unknown>),
            body: parse(response.text),
          };
        },
        async listen() {
          server = app.listen(0, '127.0.0.1');
          await once(server, 'listening');
          return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        },
        connections() {
          return connectionsOf(server!);
        },
        reset: (key) => (global as Control).reset(key),
        async close() {
          unixServer?.closeAllConnections();
          if (server === undefined) return;
          server.closeAllConnections();
          await new Promise((resolve) => server!.close(resolve));
        },
      };
    },
  };
}

const fastifySubject: Subject = {
  name: 'fastify 5',
  routeConfig: true,
  async create(options) {
    const app = Fastify();
    try {
      await app.register(sluice, options as Options);
      await app.ready();
    } finally {
      await app.close();
    }
  },
  async createGuard(name, options) {
    const app = Fastify();
    try {
      await app.register(sluice, { [name]: options });
      await app.ready();
    } finally {
      await app.close();
    }
  },
  async build(spec) {
    const app = Fastify({ trustProxy: spec.trustProxy ?? false });
    const probe = spec.probe ?? new Probe();
    const handler = spec.customHandler
      ? {
          handler: (_request: unknown, _reply: unknown, decision: Decision) => ({
            custom: true,
            policy: decision.policy,
          }),
        }
      : {};
    const guards = (given: Guards | undefined) =>
      Object.fromEntries(
        GUARD_ORDER.flatMap((name) => {
          const options = given?.[name];
          if (options === undefined) return [];
          return [[name, options === false ? false : { ...options, ...handler }]];
        }),
      );
    await app.register(sluice, { ...(spec.options ?? {}), ...guards(spec.guards), ...handler });
    for (const route of spec.routes) {
      app.route({
        method: route.method,
        url: route.path,
        config: {
          ...guards(route.guards),
          ...(route.limit === undefined
            ? {}
            : { rateLimit: route.limit === false ? false : { ...route.limit, ...handler } }),
        },
        ...(route.decorator === undefined
          ? {}
          : { onRequest: app.rateLimit({ ...route.decorator, ...handler }) }),
        handler: async (request) => {
          const control: Control = {
            peek: (req) => app.rateLimits.peek(req as FastifyRequest),
            reset: (target) => app.rateLimits.reset(target as FastifyRequest),
            settle: (req, actual) => app.rateLimits.settle(req as FastifyRequest, actual),
          };
          const extra = await probe.run(route.path, route.handler, control, request, (name) => {
            const value = request.headers[name];
            return typeof value === 'string' ? value : undefined;
          });
          return { ok: true, remaining: request.rateLimit?.remaining ?? null, ...extra };
        },
      });
    }
    await app.ready();
    return {
      async request(method, path, headers = {}) {
        const response = await app.inject({ method, url: path, headers });
        return {
          status: response.statusCode,
          headers: normalise(response.headers as Record<string, unknown>),
          body: parse(response.body),
        };
      },
      requestOverUnixSocket: (method, path, headers = {}) =>
        overUnixSocket(app.server, method, path, headers),
      async listen() {
        return app.listen({ port: 0, host: '127.0.0.1' });
      },
      connections() {
        return connectionsOf(app.server);
      },
      reset: (key) => app.rateLimits.reset(key),
      async close() {
        await app.close();
      },
    };
  },
};

let sockets = 0;

/**
 * One request to `server` over a Unix domain socket: a relay listening on a socket file hands each
 * connection to the app's server as its own (`'connection'`), so the app sees a connection with
 * no client address, as when a proxy reaches it over a Unix socket.
 */
async function overUnixSocket(
  server: Server,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<Reply> {
  const socketPath = join(tmpdir(), `sluice-${process.pid}-${++sockets}.sock`);
  const relay = createNetServer((socket) => server.emit('connection', socket));
  relay.listen(socketPath);
  await once(relay, 'listening');
  try {
    return await send({ socketPath }, method, path, headers);
  } finally {
    relay.close();
  }
}

/**
 * One request on its own connection (closed after it), to a real server, as supertest sends them:
 * to `base` over TCP, or to `socketPath` over a Unix domain socket.
 */
function send(
  target: { base: string } | { socketPath: string },
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const onResponse = (response: IncomingMessage) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          headers: normalise(response.headers as Record<string, unknown>),
          body: parse(text),
        }),
      );
    };
    const options = { method, headers, agent: false };
    const request =
      'base' in target
        ? httpRequest(`${target.base}${path}`, options, onResponse)
        : httpRequest({ ...options, socketPath: target.socketPath, path }, onResponse);
    request.on('error', reject);
    request.end();
  });
}

/** A started server's `TestApp`: every request goes over a real connection. */
async function serverApp(server: Server): Promise<Omit<TestApp, 'reset'>> {
  if (!server.listening) await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    request: (method, path, headers = {}) => send({ base }, method, path, headers),
    requestOverUnixSocket: (method, path, headers = {}) => overUnixSocket(server, method, path, headers),
    listen: async () => base,
    connections: () => connectionsOf(server),
    async close() {
      // Requests still in flight (their handlers were just released) finish first; every request
      // is on its own connection, so none stays open once answered.
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      const stuck = setTimeout(() => server.closeAllConnections(), 2000);
      await closed;
      clearTimeout(stuck);
    },
  };
}

/**
 * The suite's own functions (`skip`, `cost`, keys and priorities taking one argument) read a Node
 * request (`req.headers`, `req.socket`); on Hono they get the Node request under the `Context`
 * (`c.env.incoming` on `@hono/node-server`). sluice's keys (`byIp()`…, two arguments) get the
 * `Context` itself, through the adapter's access.
 */
function onNodeRequest<T>(options: T): T {
  const node = (fn: unknown) =>
    typeof fn === 'function' && fn.length < 2
      ? (c: HonoContext) => (fn as (req: unknown) => unknown)((c.env as { incoming: unknown }).incoming)
      : fn;
  const record = { ...(options as Record<string, unknown>) };
  // A plan per request (`algorithm` as a function) reads the request too.
  for (const name of ['skip', 'cost', 'key', 'priority', 'algorithm']) {
    if (typeof record[name] === 'function') record[name] = node(record[name]);
  }
  if (Array.isArray(record.limits)) {
    record.limits = record.limits.map((limit: Record<string, unknown>) => ({
      ...limit,
      ...(limit.key === undefined ? {} : { key: node(limit.key) }),
      ...(typeof limit.algorithm === 'function' ? { algorithm: node(limit.algorithm) } : {}),
    }));
  }
  return record as T;
}

/**
 * The client address under a trust-proxy setting, for frameworks without one (Hono): the last
 * forwarded hop when the socket is a trusted loopback proxy, the first when every proxy is trusted.
 */
function forwardedAddress(
  trust: boolean | string,
  socket: string | undefined,
  forwarded: string | undefined,
): string | undefined {
  const hops = forwarded?.split(',').map((hop) => hop.trim()) ?? [];
  if (hops.length === 0) return socket;
  if (trust === true) return hops[0];
  const loopback = socket === '127.0.0.1' || socket === '::1' || socket === '::ffff:127.0.0.1';
  return loopback ? hops[hops.length - 1] : socket;
}

const honoGuards = {
  concurrencyLimit: sluiceHono.concurrencyLimit,
  fleetShed: sluiceHono.fleetShed,
  utilizationShed: sluiceHono.utilizationShed,
} as const;

const honoSubject: Subject = {
  name: 'hono 4 on @hono/node-server',
  routeConfig: false,
  async create(options) {
    sluiceHono.rateLimit(options as Options);
  },
  async createGuard(name, options) {
    honoGuards[name](options as never);
  },
  async build(spec) {
    const app = new Hono();
    const probe = spec.probe ?? new Probe();
    const trust = spec.trustProxy;
    const access =
      trust === undefined || trust === false
        ? {}
        : {
            address: (c: HonoContext) =>
              forwardedAddress(trust, getConnInfo(c).remote.address, c.req.header('x-forwarded-for')),
            proxyTrust: trust === true ? ('all' as const) : ('some' as const),
          };
    const handler = spec.customHandler
      ? {
          handler: (c: HonoContext, decision: Decision) =>
            c.json({ custom: true, policy: decision.policy }, refusalStatus(decision) as 429),
        }
      : {};
    const guards = (given: Guards | undefined) =>
      GUARD_ORDER.flatMap((name) => {
        const options = given?.[name];
        if (!options) return [];
        const own = name === 'concurrencyLimit' ? { ...options, ...access } : options;
        return [honoGuards[name](onNodeRequest({ ...own, ...handler }) as never)];
      });
    for (const guard of guards(spec.guards)) app.use(guard);
    const global =
      spec.options === undefined
        ? undefined
        : sluiceHono.rateLimit(onNodeRequest({ ...spec.options, ...access, ...handler }));
    if (global !== undefined) app.use(global);
    for (const route of spec.routes) {
      const own = route.limit
        ? sluiceHono.rateLimit(onNodeRequest({ ...route.limit, ...access, ...handler }))
        : undefined;
      const handlers = [...guards(route.guards), ...(own ? [own] : [])];
      // A route's own middleware, registered before its handler: Hono runs them in order.
      for (const middleware of handlers) app.on(route.method, route.path, middleware);
      app.on(route.method, route.path, async (c) => {
        const control = (own ?? global) as Control | undefined;
        const extra = await probe.run(route.path, route.handler, control, c, (name) => c.req.header(name));
        return c.json({ ok: true, remaining: c.get('rateLimit')?.remaining ?? null, ...extra });
      });
    }
    app.onError((error, c) => c.json({ error: error.message }, 500));
    const served = await serverApp(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server);
    return { ...served, reset: (key) => (global as Control).reset(key) };
  },
};

const koaGuards = {
  concurrencyLimit: sluiceKoa.concurrencyLimit,
  fleetShed: sluiceKoa.fleetShed,
  utilizationShed: sluiceKoa.utilizationShed,
} as const;

const koaSubject: Subject = {
  name: 'koa 3 with @koa/router',
  routeConfig: false,
  async create(options) {
    sluiceKoa.rateLimit(options as Options);
  },
  async createGuard(name, options) {
    koaGuards[name](options as never);
  },
  async build(spec) {
    const app = new Koa();
    // Errors are answered below; Koa's own logging of them would only be noise here.
    app.silent = true;
    if (spec.trustProxy !== undefined && spec.trustProxy !== false) {
      app.proxy = true;
      // One trusted hop (the loopback proxy) reads the last forwarded address; 0 trusts them all.
      app.maxIpsCount = spec.trustProxy === true ? 0 : 1;
    }
    const probe = spec.probe ?? new Probe();
    const handler = spec.customHandler
      ? {
          handler: (ctx: KoaContext, decision: Decision) => {
            ctx.body = { custom: true, policy: decision.policy };
          },
        }
      : {};
    const guards = (given: Guards | undefined): KoaMiddleware[] =>
      GUARD_ORDER.flatMap((name) => {
        const options = given?.[name];
        return options ? [koaGuards[name]({ ...options, ...handler } as never) as KoaMiddleware] : [];
      });
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (error) {
        ctx.status = 500;
        ctx.body = { error: (error as Error).message };
      }
    });
    for (const guard of guards(spec.guards)) app.use(guard);
    const global =
      spec.options === undefined ? undefined : sluiceKoa.rateLimit({ ...spec.options, ...handler });
    if (global !== undefined) app.use(global);
    const router = new Router();
    for (const route of spec.routes) {
      const own = route.limit ? sluiceKoa.rateLimit({ ...route.limit, ...handler }) : undefined;
      const handlers = [...guards(route.guards), ...(own ? [own as KoaMiddleware] : [])];
      const method = route.method === 'GET' ? 'get' : 'post';
      router[method](route.path, ...handlers, async (ctx) => {
        const control = (own ?? global) as Control | undefined;
        const extra = await probe.run(
          route.path,
          route.handler,
          control,
          ctx,
          (name) => ctx.get(name) || undefined,
        );
        ctx.body = { ok: true, remaining: ctx.state.rateLimit?.remaining ?? null, ...extra };
      });
    }
    app.use(router.routes());
    const served = await serverApp(createServer(app.callback()).listen(0, '127.0.0.1'));
    return { ...served, reset: (key) => (global as Control).reset(key) };
  },
};

const nestGuards = {
  concurrencyLimit: (options: unknown) => new sluiceNest.ConcurrencyLimitGuard(options as never),
  fleetShed: (options: unknown) => new sluiceNest.FleetShedGuard(options as never),
  utilizationShed: (options: unknown) => new sluiceNest.UtilizationShedGuard(options as never),
} as const;

/** The custom refusal, the Nest way: an exception filter for `RateLimitException`, on either platform. */
class CustomRefusal implements ExceptionFilter {
  catch(exception: sluiceNest.RateLimitException, host: ArgumentsHost): void {
    const body = JSON.stringify({ custom: true, policy: exception.decision.policy });
    const res = host.switchToHttp().getResponse<Response | FastifyReply>();
    if ('raw' in res) res.code(exception.getStatus()).type('application/json').send(body);
    else res.status(exception.getStatus()).type('json').send(body);
  }
}
Catch(sluiceNest.RateLimitException)(CustomRefusal);

/**
 * NestJS on one of its platforms, its controller built from the spec by applying Nest's
 * decorators as functions (no decorator syntax, no emitted metadata: the controller has no
 * constructor parameters, and guards are instances). The same guards serve both platforms.
 */
function nestSubject(platform: 'express' | 'fastify'): Subject {
  return {
    name: `nestjs 12 on ${platform}`,
    routeConfig: false,
    async create(options) {
      new sluiceNest.RateLimitGuard(options as Options as never);
    },
    async createGuard(name, options) {
      nestGuards[name](options);
    },
    async build(spec) {
      const probe = spec.probe ?? new Probe();
      const guards = (given: Guards | undefined): CanActivate[] =>
        GUARD_ORDER.flatMap((name) => {
          const options = given?.[name];
          return options ? [nestGuards[name](options)] : [];
        });
      // Always registered: it applies the routes' @RateLimit() too, with or without global limits.
      const limits = new sluiceNest.RateLimitGuard(spec.options as never);
      class Routes {}
      const prototype = Routes.prototype as unknown as Record<string, unknown>;
      spec.routes.forEach((route, i) => {
        const name = `route${i}`;
        prototype[name] = async (req: sluiceNest.NestRequest) => {
          const extra = await probe.run(route.path, route.handler, limits as Control, req, (header) => {
            const value = req.headers[header];
            return typeof value === 'string' ? value : undefined;
          });
          return { ok: true, remaining: req.rateLimit?.remaining ?? null, ...extra };
        };
        const descriptor = Object.getOwnPropertyDescriptor(prototype, name)!;
        const decorate = (decorator: MethodDecorator) => decorator(prototype, name, descriptor);
        decorate(route.method === 'GET' ? Get(route.path) : Post(route.path));
        decorate(HttpCode(200));
        Req()(prototype, name, 0);
        const own = guards(route.guards);
        if (own.length > 0) decorate(UseGuards(...own));
        if (route.limit) decorate(sluiceNest.RateLimit(route.limit as never));
      });
      Controller()(Routes);
      class AppModule {}
      Module({ controllers: [Routes] })(AppModule);
      let app: INestApplication;
      if (platform === 'express') {
        const onExpress = await NestFactory.create<NestExpressApplication>(AppModule, { logger: false });
        if (spec.trustProxy !== undefined) onExpress.set('trust proxy', spec.trustProxy);
        app = onExpress;
      } else {
        const adapter = new FastifyAdapter({ trustProxy: spec.trustProxy ?? false });
        app = await NestFactory.create<NestFastifyApplication>(AppModule, adapter, { logger: false });
      }
      app.useGlobalGuards(...guards(spec.guards), limits);
      if (spec.customHandler) app.useGlobalFilters(new CustomRefusal());
      await app.listen(0, '127.0.0.1');
      const served = await serverApp(app.getHttpServer() as Server);
      return {
        ...served,
        reset: (key) => limits.reset(key),
        close: async () => {
          await served.close();
          await app.close();
        },
      };
    },
  };
}

export const subjects: readonly Subject[] = [
  expressSubject('express 5', () => express5()),
  expressSubject('express 4', () => express4() as unknown as Express),
  fastifySubject,
  honoSubject,
  koaSubject,
  nestSubject('express'),
  nestSubject('fastify'),
];

/**
 * The subjects that carry the suites onto more stores (Redis Cluster, sluice-server): Express 5's
 * middleware chain and Fastify's hooks with route config. An adapter never sees which store it
 * talks to (core's HttpLimiter calls the Store contract): every subject runs the suites on a
 * synchronous store (MemoryStore) and an asynchronous one (RedisStore on one Redis), and each
 * store's own behaviour is proved by the store suites; these two prove the wiring end to end.
 */
export const storeSubjects: readonly Subject[] = subjects.filter((subject) =>
  ['express 5', 'fastify 5'].includes(subject.name),
);
