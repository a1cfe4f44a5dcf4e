export type { Durability } from '@sluice/host/state';
export { algorithmOf, specOf } from './algorithm-spec.js';
export { HashRing, VIRTUAL_NODES } from './hash-ring.js';
export type { ServerOptions } from './options.js';
export type { DescriptorCounters, RateLimitServiceOptions, RlsBackend, RlsCall } from './rls/index.js';
export {
  LmdbBackend,
  loadConfigDirectory,
  RateLimitService,
  RLS_SERVICE_NAME,
  StoreBackend,
} from './rls/index.js';
export { SluiceServer, VERSION } from './server.js';
export type { ServerLeases } from './server-leases.js';
export { ServerStore } from './server-store.js';
export type { ServerStoreErrorEvent, ServerStoreOptions } from './server-store-options.js';
