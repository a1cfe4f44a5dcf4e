import {
  type Attributes,
  type BatchObservableResult,
  type Counter,
  type Histogram,
  type Meter,
  metrics,
  type Observable,
} from '@opentelemetry/api';
import {
  AdaptiveConcurrency,
  type Decision,
  ErrorCode,
  SluiceError,
  type Store,
  type UtilizationShedder,
} from '@sluice/core';
import { assertKnownOptions, describeValue } from '@sluice/core/adapter';
import { checkRls, type ObservedRateLimitService, rlsCounters } from './rls-counters.js';
import { timedStore } from './timed-store.js';

/** What `@sluice/otel` reads from a store: `RedisStore` has both; any store may have either. */
export interface ObservedStore {
  /** The circuit breaker's state. */
  readonly breakerState?: 'closed' | 'half-open' | 'open';
  /** Refusals answered by the deny cache without a round trip, since the store was made. */
  readonly denyCacheHits?: number;
}

export interface SluiceMetricsOptions {
  /** The meter the instruments are made on. @default metrics.getMeter('@sluice/otel') */
  meter?: Meter;
  /**
   * Stores whose breaker state and deny-cache hits are observed, by the name reported in
   * `sluice.store` (e.g. `{ redis: store }`).
   * @default {}
   */
  stores?: Readonly<Record<string, ObservedStore>>;
  /**
   * Utilization shedders whose pressure and shed fractions are observed (reported by their `name`).
   * @default []
   */
  shedders?: readonly UtilizationShedder[];
  /**
   * Adaptive concurrency limiters whose limit, in flight, no-load RTT and partitions are observed
   * (reported by their `name`): give the guard's `limiter` the same instance.
   * @default []
   */
  adaptive?: readonly AdaptiveConcurrency[];
  /**
   * Envoy rate limit services (@sluice/server's `RateLimitService`) whose per-descriptor counters
   * are observed, by the name reported in `sluice.rls.service` (e.g. `{ envoy: service }`).
   * @default {}
   */
  rls?: Readonly<Record<string, ObservedRateLimitService>>;
}

/** Breaker states as gauge values: 0 closed (healthy), 1 half-open (probing), 2 open (Redis away). */
export const BREAKER_VALUES = { closed: 0, 'half-open': 1, open: 2 } as const;

const KNOWN = [
  'meter',
  'stores',
  'shedders',
  'adaptive',
  'rls',
] as const satisfies readonly (keyof SluiceMetricsOptions)[];

/**
 * The sluice instruments on one meter. Hand `onDecision` to a middleware (it counts every limit's
 * decision, shadow limits included), wrap stores with `timeStore` for the latency histogram, and
 * list stores and shedders at creation for the observed gauges.
 *
 * Instruments (attributes in brackets):
 * - `sluice.decisions` counter [`sluice.policy`, `sluice.outcome` allowed|refused,
 *   `sluice.reason` (`'none'` when allowed), `sluice.shadow`]: one per limit per decision.
 * - `sluice.store.duration` histogram, ms [`sluice.store`, `sluice.operation`].
 * - `sluice.breaker.state` gauge, {@link BREAKER_VALUES} [`sluice.store`].
 * - `sluice.deny_cache.hits` observable counter [`sluice.store`].
 * - `sluice.shedder.pressure` gauge, ms of overload (> 0: shedding) [`sluice.shedder`].
 * - `sluice.shedder.shed_fraction` gauge, 0–1 [`sluice.shedder`, `sluice.priority`].
 * - `sluice.adaptive.limit` gauge, the concurrency limit now [`sluice.limiter`].
 * - `sluice.adaptive.in_flight` gauge, requests in flight [`sluice.limiter`].
 * - `sluice.adaptive.rtt_noload` gauge, ms, the controller's no-load RTT, once it has one
 *   [`sluice.limiter`].
 * - `sluice.adaptive.partition.in_flight` and `sluice.adaptive.partition.limit` (its guaranteed
 *   slots at the current limit) gauges [`sluice.limiter`, `sluice.priority`].
 * - `sluice.rls.total_hits`, `sluice.rls.over_limit`, `sluice.rls.near_limit`,
 *   `sluice.rls.within_limit`, `sluice.rls.shadow_mode` observable counters, hits
 *   [`sluice.rls.service`, `sluice.rls.key`: envoyproxy/ratelimit's stats key], at most the
 *   service's `maxStatsKeys` keys; `sluice.rls.stats_dropped` [`sluice.rls.service`]: the
 *   descriptor decisions left uncounted past that bound.
 *
 * @example
 * const telemetry = new SluiceMetrics({ stores: { redis: store } });
 * app.use(rateLimit({ algorithm, store: telemetry.timeStore(store, 'redis'), onDecision: telemetry.onDecision }));
 */
export class SluiceMetrics {
  private readonly decisions: Counter;
  private readonly latency: Histogram;
  private readonly observables: Observable[];
  private readonly observe: (result: BatchObservableResult) => void;
  private readonly meter: Meter;

  constructor(options: SluiceMetricsOptions = {}) {
    assertKnownOptions('SluiceMetrics', options, KNOWN);
    const meter = options.meter ?? metrics.getMeter('@sluice/otel');
    const stores = Object.entries(options.stores ?? {});
    for (const [name, store] of stores) {
      if (store === null || typeof store !== 'object') {
        throw new SluiceError(
          ErrorCode.INVALID_OPTION,
          `stores.${name} must be a store; got ${describeValue(store)}`,
          { option: `stores.${name}`, value: store },
        );
      }
    }
    const shedders: readonly UtilizationShedder[] = options.shedders ?? [];
    if (!Array.isArray(shedders as unknown)) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `shedders must be an array of UtilizationShedder; got ${describeValue(shedders)}`,
        { option: 'shedders', value: shedders },
      );
    }
    const adaptive: readonly AdaptiveConcurrency[] = options.adaptive ?? [];
    if (!Array.isArray(adaptive as unknown) || !adaptive.every((a) => a instanceof AdaptiveConcurrency)) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `adaptive must be an array of AdaptiveConcurrency; got ${describeValue(adaptive)}`,
        { option: 'adaptive', value: adaptive },
      );
    }
    const rls = rlsCounters(meter, checkRls(options.rls));
    this.meter = meter;
    this.decisions = meter.createCounter('sluice.decisions', {
      description: 'Rate-limit decisions, one per limit per request',
      unit: '{decision}',
    });
    this.latency = meter.createHistogram('sluice.store.duration', {
      description: 'Duration of store calls',
      unit: 'ms',
      advice: { explicitBucketBoundaries: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000] },
    });
    const breaker = meter.createObservableGauge('sluice.breaker.state', {
      description: 'Circuit breaker state: 0 closed, 1 half-open, 2 open',
    });
    const denyHits = meter.createObservableCounter('sluice.deny_cache.hits', {
      description: 'Refusals answered by the deny cache without a round trip to the store',
      unit: '{request}',
    });
    const pressure = meter.createObservableGauge('sluice.shedder.pressure', {
      description: 'Utilization shedder pressure: ms of overload, above 0 while shedding',
      unit: 'ms',
    });
    const fraction = meter.createObservableGauge('sluice.shedder.shed_fraction', {
      description: 'Probability that a request of this priority is shed now',
    });
    const limit = meter.createObservableGauge('sluice.adaptive.limit', {
      description: 'Adaptive concurrency limit now',
      unit: '{request}',
    });
    const inFlight = meter.createObservableGauge('sluice.adaptive.in_flight', {
      description: 'Requests in flight under the adaptive concurrency limit',
      unit: '{request}',
    });
    const rttNoLoad = meter.createObservableGauge('sluice.adaptive.rtt_noload', {
      description: "The adaptive controller's no-load round-trip time",
      unit: 'ms',
    });
    const partitionInFlight = meter.createObservableGauge('sluice.adaptive.partition.in_flight', {
      description: "Requests in flight in one priority's partition",
      unit: '{request}',
    });
    const partitionLimit = meter.createObservableGauge('sluice.adaptive.partition.limit', {
      description: "Slots guaranteed to one priority's partition at the current limit",
      unit: '{request}',
    });
    this.observables = [
      breaker,
      denyHits,
      pressure,
      fraction,
      limit,
      inFlight,
      rttNoLoad,
      partitionInFlight,
      partitionLimit,
      ...rls.observables,
    ];
    this.observe = (result) => {
      for (const [name, store] of stores) {
        const attributes = { 'sluice.store': name };
        // Each read once: a getter may compute.
        const state = store.breakerState;
        if (state !== undefined) result.observe(breaker, BREAKER_VALUES[state], attributes);
        const hits = store.denyCacheHits;
        if (hits !== undefined) result.observe(denyHits, hits, attributes);
      }
      for (const shedder of shedders) {
        result.observe(pressure, shedder.state.pressure, { 'sluice.shedder': shedder.name });
        for (const [priority, value] of Object.entries(shedder.fractions())) {
          result.observe(fraction, value, { 'sluice.shedder': shedder.name, 'sluice.priority': priority });
        }
      }
      for (const limiter of adaptive) {
        const attributes = { 'sluice.limiter': limiter.name };
        result.observe(limit, limiter.limit, attributes);
        result.observe(inFlight, limiter.inFlight, attributes);
        const rtt = limiter.rttNoLoad;
        if (rtt !== undefined) result.observe(rttNoLoad, rtt, attributes);
        for (const [priority, partition] of Object.entries(limiter.partitions())) {
          const at = { 'sluice.limiter': limiter.name, 'sluice.priority': priority };
          result.observe(partitionInFlight, partition.inFlight, at);
          result.observe(partitionLimit, partition.guaranteed, at);
        }
      }
      rls.observe(result);
    };
    meter.addBatchObservableCallback(this.observe, this.observables);
  }

  /**
   * Counts a decision: one data point per limit (`decision.limits`, or the decision itself for a
   * shedder's or a lease's). A bound function: pass it as a middleware's `onDecision`.
   */
  readonly onDecision = (_req: unknown, decision: Decision): void => {
    this.record(decision);
  };

  /** `onDecision` without a request, for decisions from `Limiter.check` in application code. */
  record(decision: Decision): void {
    const limits = decision.limits.length === 0 ? [decision] : decision.limits;
    for (const d of limits) {
      const attributes: Attributes = {
        'sluice.policy': d.policy,
        'sluice.outcome': d.allowed ? 'allowed' : 'refused',
        'sluice.reason': d.reason ?? 'none',
        'sluice.shadow': d.shadow === true,
      };
      this.decisions.add(1, attributes);
    }
  }

  /** The store, with the duration of its calls recorded in `sluice.store.duration` under `name`. */
  timeStore<S extends Store>(store: S, name: string): Store {
    return timedStore(store, (operation, ms) => {
      this.latency.record(ms, { 'sluice.store': name, 'sluice.operation': operation });
    });
  }

  /** Stops observing the stores, shedders, adaptive limiters and rate limit services. Idempotent. */
  close(): void {
    this.meter.removeBatchObservableCallback(this.observe, this.observables);
  }
}
