import {
  assertKnownOptions,
  HTTP_OPTIONS,
  HttpLimiter,
  MemoryStore,
  oneOfOption,
  type SluiceWarning,
} from '@sluice/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { fastifyAccess } from './access.js';
import { type SluiceHook, sluiceHook } from './hook.js';
import { decoratorOptions, mergeRouteOptions } from './merge.js';
import { FASTIFY_OPTIONS, type SluiceOptions } from './options.js';

const HOOKS = ['onRequest', 'preHandler'] as const;

async function sluicePlugin(app: FastifyInstance, options: SluiceOptions): Promise<void> {
  assertKnownOptions('@sluice/fastify', options, [...HTTP_OPTIONS, ...FASTIFY_OPTIONS]);
  // One store for the global limits, every route's and every decorator's, unless they bring theirs.
  const global: SluiceOptions = { ...options, store: options.store ?? new MemoryStore() };
  const defaults = {
    onError(error: Error, request: FastifyRequest): void {
      request.log.error(
        { err: error },
        'sluice: rate limiter error, request handled by the storeFailure policy',
      );
    },
    onWarning(warning: SluiceWarning): void {
      app.log.warn({ code: warning.code }, warning.message);
    },
  };
  const compile = (where: string, merged: SluiceOptions) => ({
    hook: sluiceHook(
      new HttpLimiter<FastifyRequest>(where, merged, fastifyAccess, defaults, FASTIFY_OPTIONS),
      merged.handler,
    ),
    at: oneOfOption(`${where}.hook`, merged.hook ?? 'onRequest', HOOKS),
  });
  // Without limits the plugin only serves routes' `config.rateLimit` and the decorator; a key or
  // name without an algorithm is a mistake, reported by compiling.
  const limited = ['limits', 'algorithm', 'key', 'name'].some((option) => option in options);
  const everywhere = limited ? compile('@sluice/fastify', global) : undefined;

  if (!app.hasRequestDecorator('rateLimit')) app.decorateRequest('rateLimit', undefined);
  app.decorate(
    'rateLimit',
    (own: SluiceOptions): SluiceHook => compile('rateLimit', decoratorOptions(global, own)).hook,
  );

  app.addHook('onRoute', (route) => {
    const config = route.config?.rateLimit;
    if (config === false) return;
    const applied =
      config === undefined
        ? everywhere
        : compile(`config.rateLimit of ${route.url}`, mergeRouteOptions(global, config));
    if (applied === undefined) return;
    // First in the route's own hooks, so a refused request costs no other hook's work.
    const hooks = route as { onRequest?: unknown; preHandler?: unknown };
    const existing = hooks[applied.at];
    hooks[applied.at] =
      existing === undefined
        ? [applied.hook]
        : [applied.hook, ...(Array.isArray(existing) ? existing : [existing])];
  });
}

/**
 * Fastify 5 plugin: global limits for every route registered after it, per-route
 * `config: { rateLimit: {...} | false }`, and `app.rateLimit({...})` for a route's own hook.
 * @example
 * await app.register(sluice, { limits: [
 *   { name: 'burst', key: byIp(), algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) },
 * ] });
 */
export const sluice = fp(sluicePlugin, { fastify: '5.x', name: '@sluice/fastify' });
