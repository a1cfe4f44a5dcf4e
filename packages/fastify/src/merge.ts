import { type HttpLimit, httpLimits, LIMIT_OPTIONS } from '@sluice/core/adapter';
import type { FastifyRequest } from 'fastify';
import type { SluiceOptions } from './options.js';
import { scopedToRoute } from './route-scope.js';

type Limits = readonly HttpLimit<FastifyRequest>[];

const nameOf = (limit: HttpLimit<FastifyRequest>): string =>
  limit.name ?? (typeof limit.algorithm === 'function' ? '' : limit.algorithm?.kind);

function hasLimits(options: SluiceOptions): boolean {
  return options.limits !== undefined || options.algorithm !== undefined;
}

/** A route's key, enforce and block, when it gives any without limits of its own. */
function overrides(route: SluiceOptions): Partial<HttpLimit<FastifyRequest>> | undefined {
  const own: Partial<HttpLimit<FastifyRequest>> = {};
  if (route.key !== undefined) own.key = route.key;
  if (route.enforce !== undefined) own.enforce = route.enforce;
  if (route.block !== undefined) own.block = route.block;
  return Object.keys(own).length === 0 ? undefined : own;
}

/** The options without the limit fields, which `merge` combines by name instead. */
function settings(options: SluiceOptions): SluiceOptions {
  const rest: Record<string, unknown> = { ...options };
  for (const field of LIMIT_OPTIONS) delete rest[field];
  return rest as SluiceOptions;
}

/**
 * A route's `config.rateLimit` over the plugin options: every other option of the route wins; a
 * route limit with the name of a global limit replaces it in place, with its own counter on this
 * route (`scopedToRoute`), other route limits are added (and shared with every limit of their name).
 * @param everywhere whether the plugin's limits (its own, or the default limit) apply to every
 *   route (`global`); when not, a route without limits of its own gets the default limit, with
 *   its `key`, `enforce` and `block`
 */
export function mergeRouteOptions(
  global: SluiceOptions,
  everywhere: boolean,
  route: SluiceOptions,
  scope: string,
): SluiceOptions {
  const base: Limits = everywhere ? httpLimits(global) : [];
  if (base.length === 0 && !hasLimits(route)) return { ...settings(global), ...route };
  if (!hasLimits(route)) {
    // A name alone says a limit was meant without its algorithm: refused (httpLimits), not ignored.
    if (route.name !== undefined) httpLimits(route);
    // A key, enforce or block alone re-keys (re-flags) the plugin's limits on this route, as a
    // route's keyGenerator does in @fastify/rate-limit; ignoring it would limit by the wrong key.
    const own = overrides(route);
    const limits = own === undefined ? base : base.map((limit) => ({ ...limit, ...own }));
    return { ...settings(global), ...settings(route), limits };
  }
  const extra: Limits = httpLimits(route);
  const replacing = new Map(extra.map((limit) => [nameOf(limit), limit]));
  const limits = base.map((limit) => {
    const own = replacing.get(nameOf(limit));
    return own === undefined ? limit : scopedToRoute(own, scope);
  });
  const kept = new Set(base.map(nameOf));
  for (const limit of extra) if (!kept.has(nameOf(limit))) limits.push(limit);
  return { ...settings(global), ...settings(route), limits };
}

/** Options for `app.rateLimit()`: the plugin's settings as defaults, only the given limits. */
export function decoratorOptions(global: SluiceOptions, own: SluiceOptions): SluiceOptions {
  return { ...settings(global), ...own };
}

/**
 * A route's guard config over the plugin's guard of the same kind: every option the route sets
 * wins. A route that names no engine (`limiter`/`shedder` or their options: `limit`, `budget`…)
 * keeps the plugin's engine, so `config: { fleetShed: { priority: 'low' } }` draws on the same
 * budget; a route that names one gets its own.
 * @param engine the guard kind's engine option names, the instance option first
 * @param built the plugin guard's engine as an option (`{ shedder }`)
 */
export function mergeGuardOptions<O extends object>(
  global: O | undefined,
  built: Readonly<Record<string, unknown>> | undefined,
  route: Partial<O>,
  engine: readonly string[],
): O {
  // Required options missing from the result are reported by the guard's factory.
  if (global === undefined) return route as O;
  const settings: Record<string, unknown> = { ...(global as Record<string, unknown>) };
  for (const name of engine) delete settings[name];
  const own = engine.some((name) => (route as unknown as Record<string, unknown>)[name] !== undefined);
  return { ...settings, ...(own ? {} : built), ...route } as O;
}

/** Inline guard options without a store get the plugin's: one store for everything it builds. */
export function withStore<O extends object>(options: O, engine: readonly string[], store: unknown): O {
  const instance = engine[0]!;
  const record = options as unknown as Record<string, unknown>;
  if (!engine.includes('store') || record[instance] !== undefined || record.store !== undefined)
    return options;
  return { ...options, store };
}
