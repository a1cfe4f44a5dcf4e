import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Decision, HttpLimitOptions, Store } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import type { Express, NextFunction, Request, Response } from 'express';
import express5 from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import supertest from 'supertest';

/** Options written once for both adapters: keys use the access argument, never the framework's request. */
export type Options = HttpLimitOptions<unknown>;

export interface RouteSpec {
  method: 'GET' | 'POST';
  path: string;
  /** Express: a per-route middleware. Fastify: `config.rateLimit` (merged with the global options). */
  limit?: Options | false;
  /** Fastify only: `onRequest: app.rateLimit(decorator)`. */
  decorator?: Options;
}

export interface AppSpec {
  /** Global limits: `app.use(rateLimit(options))` / `app.register(sluice, options)`. */
  options?: Options;
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
  request(method: 'GET' | 'POST', path: string, headers?: Record<string, string>): Promise<Reply>;
  /** Starts a real HTTP server on a free loopback port; returns its base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface Subject {
  name: string;
  /** Fastify's per-route config adds to, overrides and exempts from the global limits. */
  routeConfig: boolean;
  build(spec: AppSpec): Promise<TestApp>;
  /** Creates the adapter with these options; rejects with the creation error. */
  create(options: unknown): Promise<void>;
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

type ExpressFactory = () => Express;

function expressSubject(name: string, create: ExpressFactory): Subject {
  return {
    name,
    routeConfig: false,
    async create(options) {
      rateLimit(options as Options);
    },
    async build(spec) {
      const app = create();
      if (spec.trustProxy !== undefined) app.set('trust proxy', spec.trustProxy);
      const withHandler = (options: Options) =>
        spec.customHandler
          ? {
              ...options,
              handler: (_req: Request, res: Response, _next: NextFunction, decision: Decision) => {
                res.status(429).json({ custom: true, policy: decision.policy });
              },
            }
          : options;
      if (spec.options !== undefined) app.use(rateLimit(withHandler(spec.options)));
      for (const route of spec.routes) {
        const handlers = route.limit ? [rateLimit(withHandler(route.limit))] : [];
        const method = route.method === 'GET' ? 'get' : 'post';
        app[method](route.path, ...handlers, (req: Request, res: Response) => {
          res.json({ ok: true, remaining: req.rateLimit?.remaining ?? null });
        });
      }
      app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
        res.status(500).json({ error: error.message });
      });
      let server: Server | undefined;
      return {
        async request(method, path, headers = {}) {
          const agent = supertest(app);
          const response = await (method === 'GET' ? agent.get(path) : agent.post(path)).set(headers);
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
        async close() {
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
  async build(spec) {
    const app = Fastify({ trustProxy: spec.trustProxy ?? false });
    const handler = spec.customHandler
      ? {
          handler: (_request: unknown, _reply: unknown, decision: Decision) => ({
            custom: true,
            policy: decision.policy,
          }),
        }
      : {};
    await app.register(sluice, { ...(spec.options ?? {}), ...handler });
    for (const route of spec.routes) {
      app.route({
        method: route.method,
        url: route.path,
        config:
          route.limit === undefined
            ? {}
            : { rateLimit: route.limit === false ? false : { ...route.limit, ...handler } },
        ...(route.decorator === undefined
          ? {}
          : { onRequest: app.rateLimit({ ...route.decorator, ...handler }) }),
        handler: async (request) => ({ ok: true, remaining: request.rateLimit?.remaining ?? null }),
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
      async listen() {
        return app.listen({ port: 0, host: '127.0.0.1' });
      },
      async close() {
        await app.close();
      },
    };
  },
};

export const subjects: readonly Subject[] = [
  expressSubject('express 5', () => express5()),
  expressSubject('express 4', () => express4() as unknown as Express),
  fastifySubject,
];
