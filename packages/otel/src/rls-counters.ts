import type { BatchObservableResult, Meter, Observable } from '@opentelemetry/api';
import { ErrorCode, SluiceError } from '@sluice/core';
import { describeValue } from '@sluice/core/adapter';

/** One stats key's counters, as `RateLimitService.counters()` (@sluice/server) gives them. */
export interface RlsDescriptorCounters {
  readonly totalHits: number;
  readonly overLimit: number;
  readonly nearLimit: number;
  readonly withinLimit: number;
  readonly shadowMode: number;
}

/**
 * What `@sluice/otel` reads from Envoy's rate limit service: @sluice/server's `RateLimitService`
 * has both. Described here by shape, so that @sluice/otel never loads the server.
 */
export interface ObservedRateLimitService {
  /** The per-descriptor counters by stats key (bounded by the service's `maxStatsKeys`). */
  counters(): Readonly<Record<string, RlsDescriptorCounters>>;
  /**
   * Descriptor decisions left uncounted since the service was made: their stats key was new and
   * the service already kept `maxStatsKeys`.
   */
  readonly droppedStats?: number;
}

/** The instrument of each counter, named as envoyproxy/ratelimit names its stats. */
const FIELDS = {
  total_hits: ['totalHits', 'Hits on a descriptor (hits_addend summed)'],
  over_limit: ['overLimit', 'Hits past the limit'],
  near_limit: ['nearLimit', 'Hits within the limit past its near-limit ratio (80% by default)'],
  within_limit: ['withinLimit', 'Hits within the limit'],
  shadow_mode: ['shadowMode', 'Hits past the limit let through by shadow mode'],
} as const satisfies Record<string, readonly [keyof RlsDescriptorCounters, string]>;

/** Throws unless `rls` is a record of services by name. */
export function checkRls(rls: unknown): readonly [string, ObservedRateLimitService][] {
  if (rls === undefined) return [];
  if (rls === null || typeof rls !== 'object' || Array.isArray(rls)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `rls must be rate limit services by name (e.g. { envoy: service }); got ${describeValue(rls)}`,
      { option: 'rls', value: rls },
    );
  }
  const services = Object.entries(rls as Record<string, unknown>);
  for (const [name, service] of services) {
    if (
      service === null ||
      typeof service !== 'object' ||
      typeof (service as ObservedRateLimitService).counters !== 'function'
    ) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `rls.${name} must be a RateLimitService (anything with counters()); got ${describeValue(service)}`,
        { option: `rls.${name}`, value: service },
      );
    }
  }
  return services as [string, ObservedRateLimitService][];
}

/**
 * The rate limit services' observable counters on `meter`, each data point one stats key
 * [`sluice.rls.service`, `sluice.rls.key`]: their number is the service's `maxStatsKeys` at most,
 * and `sluice.rls.stats_dropped` [`sluice.rls.service`] counts the descriptor decisions turned
 * away past it (so that a bound reached is seen, not silent).
 */
export function rlsCounters(
  meter: Meter,
  services: readonly [string, ObservedRateLimitService][],
): { observables: Observable[]; observe: (result: BatchObservableResult) => void } {
  const counters = Object.entries(FIELDS).map(
    ([name, [field, description]]) =>
      [meter.createObservableCounter(`sluice.rls.${name}`, { description, unit: '{hit}' }), field] as const,
  );
  const dropped = meter.createObservableCounter('sluice.rls.stats_dropped', {
    description: 'Descriptor decisions left uncounted: a new stats key past maxStatsKeys',
    unit: '{decision}',
  });
  return {
    observables: [...counters.map(([counter]) => counter), dropped],
    observe(result) {
      for (const [service, rls] of services) {
        for (const [key, values] of Object.entries(rls.counters())) {
          const attributes = { 'sluice.rls.service': service, 'sluice.rls.key': key };
          for (const [counter, field] of counters) result.observe(counter, values[field], attributes);
        }
        const lost = rls.droppedStats;
        if (lost !== undefined) result.observe(dropped, lost, { 'sluice.rls.service': service });
      }
    },
  };
}
