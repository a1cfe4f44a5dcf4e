export type { ObservedStore, SluiceMetricsOptions } from './sluice-metrics.js';
export { BREAKER_VALUES, SluiceMetrics } from './sluice-metrics.js';
export type { StoreTiming } from './timed-store.js';
export { timedStore } from './timed-store.js';
