// `@sluice/host/state`: the LMDB state layer that HostStore runs on, for sluice-server (which runs
// the same steps over the same layer behind its commands). Apps import `@sluice/host`; nothing
// here is needed to limit requests. Every name is pinned by test/host/public-api.test.ts.

export type { EnvOwner } from './data-dir.js';
export { acquireIn, peekLeaseIn, releaseIn } from './lease-steps.js';
export type { StateBatch } from './limit-steps.js';
export { chargeIn, checkIn, peekIn, refundIn, resetIn } from './limit-steps.js';
export { MAX_SHARDS, shardOf } from './shard-of.js';
export type { Durability, StateDbOptions } from './state-db.js';
export { Queued, StateDb } from './state-db.js';
export { openStateEnv } from './state-env.js';
export { openShards } from './state-shards.js';
export type { StateTxn, StateWriter } from './state-txn.js';
export { MAX_KEY_BYTES, storedId, storedIdOfText } from './stored-key.js';
