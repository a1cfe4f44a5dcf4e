import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Decision } from '@sluice/core';
import {
  adaptiveConcurrency,
  concurrencyLimit,
  fleetShed,
  rateLimit,
  utilizationShed,
} from '@sluice/express';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import supertest from 'supertest';
import { refusalStatus } from '../../../packages/core/src/http/problem.js';
import {
  type Control,
  connectionsOf,
  GUARD_ORDER,
  type Guards,
  normalise,
  type Options,
  overUnixSocket,
  Probe,
  parse,
  type Subject,
} from '../harness.js';

const expressGuards = { concurrencyLimit, fleetShed, utilizationShed, adaptiveConcurrency } as const;

type ExpressFactory = () => Express;

export function expressSubject(name: string, create: ExpressFactory): Subject {
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
      const global = spec.defaults
        ? rateLimit()
        : spec.options === undefined
          ? undefined
          : rateLimit(withHandler(spec.options));
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
