export type { HostLeases } from './host-leases.js';
export { HostStore } from './host-store.js';
export type { HostStoreLogger, HostStoreOptions } from './host-store-options.js';
export type { Durability } from './state-db.js';
