/**
 * A process that takes concurrency leases and holds them until it is killed (bundled and forked by
 * lease-faults.test.ts): `SLUICE_LEASE_HOLDER` is `{ address, key, limit, ttl, now }`. It reports
 * `{ held }` over IPC once its leases are in the store, then waits to be SIGKILLed.
 */
import { ConcurrencyLimiter } from '@sluice/core';
import { type BackendAddress, openStore } from './lease-backends.js';

const spec = JSON.parse(process.env.SLUICE_LEASE_HOLDER!) as {
  address: BackendAddress;
  key: string;
  limit: number;
  ttl: number;
  now: number;
};
const { store } = openStore(spec.address);
const limiter = new ConcurrencyLimiter({ name: 'jobs', limit: spec.limit, ttl: spec.ttl, store });
let held = 0;
for (let i = 0; i < spec.limit; i++) {
  if ((await limiter.acquire(spec.key, { now: spec.now })).decision.allowed) held++;
}
process.send!({ held });
// Holds its leases (and its connection) until the test kills it.
setInterval(() => {}, 1 << 30);
