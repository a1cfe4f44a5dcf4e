import { type HttpLimit, httpLimits } from '@sluice/core';
import type { FastifyRequest } from 'fastify';
import type { SluiceOptions } from './options.js';

type Limits = readonly HttpLimit<FastifyRequest>[];

const nameOf = (limit: HttpLimit<FastifyRequest>): string => limit.name ?? limit.algorithm?.kind;

function hasLimits(options: SluiceOptions): boolean {
  return options.limits !== undefined || options.algorithm !== undefined;
}

/** The options without the limit fields, which `merge` combines by name instead. */
function settings(options: SluiceOptions): SluiceOptions {
  const { limits: _limits, algorithm: _algorithm, key: _key, name: _name, ...rest } = options;
  return rest;
}

/**
 * A route's `config.rateLimit` over the plugin options: every other option of the route wins; a
 * route limit with the name of a global limit replaces it in place, other route limits are added.
 */
export function mergeRouteOptions(global: SluiceOptions, route: SluiceOptions): SluiceOptions {
  const base: Limits = hasLimits(global) ? httpLimits(global) : [];
  const extra: Limits = hasLimits(route) ? httpLimits(route) : [];
  const replacing = new Map(extra.map((limit) => [nameOf(limit), limit]));
  const limits = base.map((limit) => replacing.get(nameOf(limit)) ?? limit);
  const kept = new Set(base.map(nameOf));
  for (const limit of extra) if (!kept.has(nameOf(limit))) limits.push(limit);
  return { ...settings(global), ...settings(route), limits };
}

/** Options for `app.rateLimit()`: the plugin's settings as defaults, only the given limits. */
export function decoratorOptions(global: SluiceOptions, own: SluiceOptions): SluiceOptions {
  return { ...settings(global), ...own };
}
