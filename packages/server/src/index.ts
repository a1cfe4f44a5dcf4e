export type { Durability } from '@sluice/host/state';
export { algorithmOf, specOf } from './algorithm-spec.js';
export { HashRing, VIRTUAL_NODES } from './hash-ring.js';
export type { ServerOptions } from './options.js';
export { SluiceServer, VERSION } from './server.js';
export type { ServerLeases } from './server-leases.js';
export { ServerStore } from './server-store.js';
export type { ServerStoreErrorEvent, ServerStoreOptions } from './server-store-options.js';
