import type { Algorithm, PlanFunction } from '@sluice/core';
import { bindName, type HttpLimit } from '@sluice/core/adapter';
import type { FastifyRequest } from 'fastify';

/**
 * A route's own copy of a limit: the same name (in headers and `decision.policy`), the same key,
 * its state apart from every other route's. A route limit that replaces a global one by its name
 * is that route's limit, as @fastify/rate-limit counts a route's `config.rateLimit` per route:
 * `/login` and `/reset` each replacing the global limit with 2 a minute admit 2 each, not 2
 * together. The route's method is part of it, so a GET and its automatic HEAD route count apart.
 * The fingerprint is bound, not the key, so `reset(key)` through the route's limiter still finds it.
 * @param route the route's method and URL, `'GET /login'`
 */
export function scopedToRoute(limit: HttpLimit<FastifyRequest>, route: string): HttpLimit<FastifyRequest> {
  const scope = `route ${route}`;
  const { algorithm } = limit;
  if (typeof algorithm !== 'function') return { ...limit, algorithm: bindName(algorithm, scope) };
  const plan: PlanFunction<FastifyRequest> = (request) => {
    const chosen = algorithm(request);
    return chosen instanceof Promise
      ? chosen.then((resolved: Algorithm) => bindName(resolved, scope))
      : bindName(chosen, scope);
  };
  return { ...limit, algorithm: plan };
}

/** The route's method and URL as its counters are scoped: `'GET /login'`, `'GET,POST /x'`. */
export function routeScope(method: string | readonly string[], url: string): string {
  return `${typeof method === 'string' ? method : method.join(',')} ${url}`;
}
