// @sluice/server/client: ServerStore, the client of a sluice-server, for apps that only talk to
// one. It loads neither LMDB (a native module) nor the server: nothing here imports @sluice/host
// (test/server/client-entry.test.ts holds it to that, on the built files).
export { HashRing, VIRTUAL_NODES } from './hash-ring.js';
export type { ServerLeases } from './server-leases.js';
export { ServerStore } from './server-store.js';
export type { ServerStoreErrorEvent, ServerStoreOptions } from './server-store-options.js';
