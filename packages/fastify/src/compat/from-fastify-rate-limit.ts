import { ErrorCode, MemoryStore, SluiceError, type Store } from '@sluice/core';
import { describeValue, withControl } from '@sluice/core/adapter';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { fastifyDefaults } from '../defaults.js';
import { routeScope } from '../route-scope.js';
import type { FastifyRateLimitOptions, FastifyRateLimitRouteOptions } from './options.js';
import { type PeerCheck, PeerLimit } from './peer-limit.js';
import { mergedParams, type PeerParams, pluginParams } from './peer-params.js';
import { isPeerStoreClass, PeerStore } from './peer-store.js';
import { redisStoreOf } from './redis-store.js';

/** Every option of @fastify/rate-limit 11.2.0, and whether it is taken. */
const TAKEN = [
  'global',
  'max',
  'timeWindow',
  'hook',
  'cache',
  'allowList',
  'redis',
  'nameSpace',
  'store',
  'skipOnError',
  'ban',
  'onBanReach',
  'continueExceeding',
  'exponentialBackoff',
  'keyGenerator',
  'ipv6Subnet',
  'errorResponseBuilder',
  'enableDraftSpec',
  'addHeaders',
  'addHeadersOnExceeding',
  'onExceeding',
  'onExceeded',
  'groupId',
] as const satisfies readonly (keyof FastifyRateLimitOptions)[];

/** Fastify's own registration options, passed beside a plugin's (`prefix`, `logLevel`…). */
const REGISTRATION = ['prefix', 'logLevel', 'logSerializers'];

/**
 * The options sluice refuses: an unknown name (a typo, or an option of another version), and a
 * `store` that is neither an @fastify/rate-limit store class nor a sluice store.
 */
function refuseUnknown(options: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(options)) {
    if ((TAKEN as readonly string[]).includes(name) || REGISTRATION.includes(name)) continue;
    throw new SluiceError(
      ErrorCode.UNKNOWN_OPTION,
      `fromFastifyRateLimit: unknown option ${JSON.stringify(name)} (got ${describeValue(value)}); it takes @fastify/rate-limit 11's options: ${TAKEN.join(', ')}`,
      { option: name, value },
    );
  }
  const store = options.store;
  if (store !== undefined && !isSluiceStore(store) && !isPeerStoreClass(store)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `fromFastifyRateLimit: store must be an @fastify/rate-limit store class (with incr and child) or a sluice store (MemoryStore, RedisStore from @sluice/redis…); got ${describeValue(store)}`,
      { option: 'store', value: store },
    );
  }
}

function isSluiceStore(value: unknown): value is Store {
  if (value === null || typeof value !== 'object') return false;
  const store = value as Record<string, unknown>;
  return typeof store.consume === 'function' && typeof store.peek === 'function';
}

/** A route's `config.rateLimit`, as @fastify/rate-limit takes it: absent, `false` or an object. */
function routeConfigOf(route: RouteOptions): Record<string, unknown> | false | undefined {
  const value = (route.config as { rateLimit?: unknown } | undefined)?.rateLimit;
  if (value === undefined || value === null || value === false) return value === false ? false : undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `config.rateLimit of ${route.url} must be an options object or false; got ${describeValue(value)}`,
      { option: 'config.rateLimit', value },
    );
  }
  return value as Record<string, unknown>;
}

/** Adds a hook after the route's own hooks of that stage, as @fastify/rate-limit adds its. */
function appendHook(route: RouteOptions, stage: string, hook: unknown): void {
  const hooks = route as unknown as Record<string, unknown>;
  const existing = hooks[stage];
  hooks[stage] =
    existing === undefined ? [hook] : Array.isArray(existing) ? [...existing, hook] : [existing, hook];
}

async function fastifyRateLimitCompat(app: FastifyInstance, options: FastifyRateLimitOptions): Promise<void> {
  refuseUnknown(options as Record<string, unknown>);
  const params = pluginParams(options);
  const everywhere = typeof options.global === 'boolean' ? options.global : true;
  const memory = () =>
    new MemoryStore({
      // Date.now read at each call, not kept: an app's fake clock (installed after the plugin
      // is registered) is then the store's clock too.
      clock: () => Date.now(),
      ...(typeof options.cache === 'number' && options.cache >= 1
        ? { maxKeys: Math.trunc(options.cache) }
        : {}),
    });
  const given = options.store as unknown;
  // The latest failure a RedisStore reported: what a request it failed is answered with.
  const storeError: { last?: unknown } = {};
  // An @fastify/rate-limit store class: built with the plugin's options, a child per route, as there.
  const peerStore = isPeerStoreClass(given) ? new given({ ...params }) : undefined;
  const store: Store =
    (given as Store | undefined) !== undefined && peerStore === undefined
      ? (given as Store)
      : options.redis !== undefined && options.redis !== null
        ? await redisStoreOf(
            options.redis,
            options.nameSpace,
            (error) => {
              storeError.last = error;
            },
            { warn: (message) => app.log.warn(message) },
          )
        : memory();
  const defaults = fastifyDefaults(app);
  // One registration limits a request once, whichever of its hooks runs first.
  const ran = Symbol('fromFastifyRateLimit ran');
  const compile = (name: string, own: PeerParams, route?: RouteOptions): PeerLimit => {
    if (peerStore === undefined) return new PeerLimit(name, own, store, defaults, store, storeError);
    const counts = own === params ? peerStore : peerStore.child({ ...own, routeInfo: route ?? {} });
    const failed = (error: unknown) => {
      storeError.last = error;
    };
    return new PeerLimit(name, own, new PeerStore(counts, failed), defaults, store, storeError);
  };
  const global = compile('global', params);
  let decorators = 0;

  if (!app.hasRequestDecorator('rateLimit')) app.decorateRequest('rateLimit', undefined);
  if (!app.hasDecorator('createRateLimit')) {
    app.decorate('createRateLimit', (own?: FastifyRateLimitRouteOptions) => {
      const limit =
        typeof own === 'object' && own !== null
          ? compile(
              `createRateLimit ${++decorators}`,
              mergedParams('createRateLimit', params, own as Record<string, unknown>),
            )
          : global;
      return (request: FastifyRequest, call?: { increment?: boolean }): Promise<PeerCheck> =>
        limit.check(request, call?.increment !== false);
    });
  }
  if (!app.hasDecorator('rateLimit')) {
    // @fastify/rate-limit's `app.rateLimit(options)` takes its options, where @sluice/fastify's
    // takes sluice's: the augmented type is sluice's (one program cannot hold both), hence the cast.
    const rateLimit = (own?: FastifyRateLimitRouteOptions) => {
      const limit =
        typeof own === 'object' && own !== null
          ? compile(
              `rateLimit ${++decorators}`,
              mergedParams('rateLimit', params, own as Record<string, unknown>),
            )
          : global;
      return withControl(limit.hook(ran), limit.limiter);
    };
    app.decorate('rateLimit', rateLimit as never);
  }

  app.addHook('onRoute', (route) => {
    const config = routeConfigOf(route);
    if (config === false) return;
    if (config === undefined) {
      if (everywhere) appendHook(route, global.params.hook, global.hook(ran));
      return;
    }
    const merged = mergedParams(`config.rateLimit of ${route.url}`, params, config);
    // A route counts on its own (method and URL: a GET and its HEAD apart), or with its group.
    const name =
      merged.groupId === undefined
        ? `route ${routeScope(route.method, route.url)}`
        : `group ${merged.groupId}`;
    const limit = compile(name, merged, route);
    appendHook(route, merged.hook, limit.hook(ran));
  });
}

/**
 * @fastify/rate-limit 11 on sluice: register it where the peer was registered, with the same
 * options, and routes' `config.rateLimit`, `app.rateLimit()` and `app.createRateLimit()` behave as
 * there (the windows, headers, refusals through the app's error handler, `ban`, groups). The
 * counting is sluice's: its algorithms (a stepped token bucket is the peer's window), its stores
 * (`redis` becomes a `RedisStore`), its lifecycle. Options it cannot honour are refused at
 * registration with a coded `SluiceError` naming them; the differences kept on purpose are listed
 * in docs/migrating-from-fastify-rate-limit.md.
 * @example
 * // Was: await app.register(import('@fastify/rate-limit'), { max: 100, timeWindow: '1 minute' })
 * await app.register(fromFastifyRateLimit, { max: 100, timeWindow: '1 minute' });
 */
export const fromFastifyRateLimit = fp(fastifyRateLimitCompat, {
  fastify: '5.x',
  name: '@sluice/fastify/from-fastify-rate-limit',
});
