import { ErrorCode, MemoryStore, type RateLimitControl, SluiceError } from '@sluice/core';
import {
  assertKnownOptions,
  booleanOption,
  buildGuard,
  CompiledLimiters,
  describeValue,
  GUARD_ENGINES,
  type GuardName,
  guardFunctionName,
  HTTP_OPTIONS,
  type HttpGuard,
  HttpLimiter,
  LIMIT_OPTIONS,
  oneOfOption,
  withControl,
} from '@sluice/core/adapter';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { fastifyAccess } from './access.js';
import { fastifyDefaults } from './defaults.js';
import { guardHook, rateLimitHook, type SluiceHook } from './hook.js';
import { decoratorOptions, mergeGuardOptions, mergeRouteOptions, withStore } from './merge.js';
import {
  FASTIFY_OPTIONS,
  type FastifyHookOptions,
  GUARD_NAMES,
  type GuardOptionsByName,
  PLUGIN_OPTIONS,
  type SluiceOptions,
  type SluicePluginOptions,
} from './options.js';
import { routeScope } from './route-scope.js';

const HOOKS = ['onRequest', 'preHandler'] as const;
type Stage = (typeof HOOKS)[number];

/** A compiled hook and the stage it runs in. */
interface Applied {
  readonly hook: SluiceHook;
  readonly at: Stage;
}

async function sluicePlugin(app: FastifyInstance, options: SluicePluginOptions): Promise<void> {
  assertKnownOptions('@sluice/fastify', options, [
    ...HTTP_OPTIONS,
    ...FASTIFY_OPTIONS,
    ...PLUGIN_OPTIONS,
    ...GUARD_NAMES,
  ]);
  const {
    concurrencyLimit,
    fleetShed,
    utilizationShed,
    adaptiveConcurrency,
    global: applies,
    ...limitOptions
  } = options;
  const everywhere = booleanOption('global', applies ?? true);
  const stray = LIMIT_OPTIONS.find((field) => limitOptions[field] !== undefined);
  if (!everywhere && stray !== undefined) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `@sluice/fastify: global: false applies no plugin limit to routes, so ${stray} would never be used; give it in a route's config.rateLimit, or drop global: false`,
      { option: 'global', value: applies },
    );
  }
  const guardOptions: Partial<GuardOptionsByName> = pickDefined({
    concurrencyLimit,
    fleetShed,
    utilizationShed,
    adaptiveConcurrency,
  });
  // One store for the global limits, every route's and every decorator's, and for the leases of
  // guards built here, unless they bring theirs.
  const store = options.store ?? new MemoryStore();
  const global: SluiceOptions = { ...limitOptions, store };
  const defaults = fastifyDefaults(app);
  const stage = (where: string, merged: FastifyHookOptions): Stage =>
    oneOfOption(`${where}.hook`, merged.hook ?? 'onRequest', HOOKS);
  // Every limiter the plugin compiled, so `app.rateLimits.settle(request)` finds the ones that admitted it.
  const compiled = new CompiledLimiters<FastifyRequest>();
  const compileRateLimit = (
    where: string,
    merged: SluiceOptions,
  ): Applied & { limiter: HttpLimiter<FastifyRequest> } => {
    const limiter = compiled.add(
      new HttpLimiter<FastifyRequest>(where, merged, fastifyAccess, defaults, FASTIFY_OPTIONS),
    );
    return { hook: rateLimitHook(limiter, merged.handler), at: stage(where, merged), limiter };
  };
  const compileGuard = <G extends GuardName>(
    name: G,
    where: string,
    merged: GuardOptionsByName[G],
  ): Applied & { guard: HttpGuard<FastifyRequest> } => {
    const inline = withStore(merged, GUARD_ENGINES[name], store);
    const guard = buildGuard(
      name,
      inline,
      { access: fastifyAccess, defaults, options: FASTIFY_OPTIONS },
      where,
    );
    return {
      guard,
      hook: guardHook(guard, merged.handler, guardFunctionName(name)),
      at: stage(where, merged),
    };
  };

  // With global: false the plugin only serves routes' `config.rateLimit` and the decorator.
  const plugin = everywhere ? compileRateLimit('@sluice/fastify', global) : undefined;
  const guardsEverywhere = new Map<GuardName, Applied & { guard: HttpGuard<FastifyRequest> }>();
  for (const name of GUARD_NAMES) {
    const own = guardOptions[name];
    if (own !== undefined) guardsEverywhere.set(name, compileGuard(name, `@sluice/fastify ${name}`, own));
  }

  if (!app.hasRequestDecorator('rateLimit')) app.decorateRequest('rateLimit', undefined);
  app.decorate('rateLimit', (own: SluiceOptions): SluiceHook & RateLimitControl<FastifyRequest> => {
    const { hook, limiter } = compileRateLimit('rateLimit', decoratorOptions(global, own));
    return withControl(hook, limiter);
  });
  const noGlobal = () =>
    Promise.reject(
      new SluiceError(
        ErrorCode.MISSING_OPTION,
        "app.rateLimits reads the plugin's own limits, and it was registered with global: false, without any",
        { option: 'global' },
      ),
    );
  const rateLimits: RateLimitControl<FastifyRequest> = {
    peek: (request) => plugin?.limiter.peek(request) ?? noGlobal(),
    reset: (target) => plugin?.limiter.reset(target) ?? noGlobal(),
    // A request may have been limited by the plugin's limits, its route's and a decorator's hooks.
    settle: (request, actual) => compiled.settle(request, actual),
  };
  app.decorate('rateLimits', rateLimits);
  for (const name of GUARD_NAMES) {
    app.decorate(
      name,
      (own: GuardOptionsByName[typeof name]): SluiceHook => compileGuard(name, name, own).hook,
    );
  }

  app.addHook('onRoute', (route) => {
    const applied: Applied[] = [];
    for (const name of GUARD_NAMES) {
      const config = routeConfig(name, route.url, route.config?.[name]);
      if (config === false) continue;
      const plugin = guardsEverywhere.get(name);
      if (config === undefined) {
        if (plugin !== undefined) applied.push(plugin);
        continue;
      }
      const merged = mergeGuardOptions(guardOptions[name], plugin?.guard.engine, config, GUARD_ENGINES[name]);
      applied.push(compileGuard(name, `config.${name} of ${route.url}`, merged));
    }
    const config = routeConfig('rateLimit', route.url, route.config?.rateLimit);
    if (config !== false) {
      const limits =
        config === undefined
          ? plugin
          : compileRateLimit(
              `config.rateLimit of ${route.url}`,
              mergeRouteOptions(global, everywhere, config, routeScope(route.method, route.url)),
            );
      if (limits !== undefined) applied.push(limits);
    }
    if (applied.length === 0) return;
    // First in the route's own hooks, in the order above, so a refused request costs no other
    // hook's work and a shed request takes no lease and no rate-limit quota.
    const hooks = route as { onRequest?: unknown; preHandler?: unknown };
    for (const at of HOOKS) {
      const ours = applied.filter((entry) => entry.at === at).map((entry) => entry.hook);
      if (ours.length === 0) continue;
      const existing = hooks[at];
      hooks[at] =
        existing === undefined ? ours : [...ours, ...(Array.isArray(existing) ? existing : [existing])];
    }
  });
}

/**
 * A route's config value as given: absent, `false` or an options object. Anything else would be
 * spread into options (`'yes'` into `{ 0: 'y', … }`, `true` into `{}`), so it is refused here.
 */
function routeConfig<T>(name: string, url: string, value: T | false | undefined): T | false | undefined {
  if (value === undefined || value === false) return value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `config.${name} of ${url} must be an options object or false; got ${describeValue(value)}`,
      { option: `config.${name}`, value },
    );
  }
  return value;
}

function pickDefined<T extends object>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/**
 * Fastify 5 plugin: rate limits, the concurrency limit, both load shedders and the adaptive
 * concurrency limit for every route
 * registered after it (without `limits` or `algorithm`, the default limit: 100 requests a minute
 * per address; `global: false` for none but the routes' own); per-route `config: { rateLimit,
 * concurrencyLimit, fleetShed, utilizationShed, adaptiveConcurrency }` (options, or `false` to
 * exempt); and the decorators `app.rateLimit()`, `app.concurrencyLimit()`, `app.fleetShed()`,
 * `app.utilizationShed()`, `app.adaptiveConcurrency()` for a route's own hooks.
 * On each route the hooks run utilization shedder, fleet shedder, concurrency limit, adaptive
 * concurrency limit, rate limits.
 * @example
 * await app.register(sluice); // 100 requests a minute per address on every route
 * @example
 * await app.register(sluice, {
 *   limits: [{ name: 'burst', key: byIp(), algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }],
 *   fleetShed: { shedder: fleet, priority: (request) => (request.url.startsWith('/pay') ? 'critical' : 'normal') },
 *   concurrencyLimit: { limit: 20, key: byToken() },
 * });
 */
export const sluice = fp(sluicePlugin, { fastify: '5.x', name: '@sluice/fastify' });
