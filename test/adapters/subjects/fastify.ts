import type { Decision } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify, { type FastifyRequest } from 'fastify';
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

export const fastifySubject: Subject = {
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
    if (spec.defaults) await app.register(sluice);
    else
      await app.register(sluice, {
        ...(spec.options ?? { global: false }),
        ...guards(spec.guards),
        ...handler,
      });
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
