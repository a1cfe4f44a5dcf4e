export type { ObservedRateLimitService, RlsDescriptorCounters } from './rls-counters.js';
export type { ObservedStore, SluiceMetricsOptions } from './sluice-metrics.js';
export { BREAKER_VALUES, SluiceMetrics } from './sluice-metrics.js';
export type { StoreOperation, StoreTiming } from './timed-store.js';
export { timedStore } from './timed-store.js';
