import type { Server } from 'node:http';
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
import * as sluiceNest from '@sluice/nestjs';
import type { Response } from 'express';
import type { FastifyReply } from 'fastify';
import {
  type Control,
  GUARD_ORDER,
  type Guards,
  type Options,
  Probe,
  type Subject,
  serverApp,
} from '../harness.js';

const nestGuards = {
  concurrencyLimit: (options: unknown) => new sluiceNest.ConcurrencyLimitGuard(options as never),
  fleetShed: (options: unknown) => new sluiceNest.FleetShedGuard(options as never),
  utilizationShed: (options: unknown) => new sluiceNest.UtilizationShedGuard(options as never),
  adaptiveConcurrency: (options: unknown) => new sluiceNest.AdaptiveConcurrencyGuard(options as never),
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
export function nestSubject(platform: 'express' | 'fastify'): Subject {
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
      const limits = spec.defaults
        ? new sluiceNest.RateLimitGuard()
        : new sluiceNest.RateLimitGuard((spec.options ?? { global: false }) as never);
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
