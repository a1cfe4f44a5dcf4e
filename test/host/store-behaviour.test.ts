import { describeBlockAndShadow } from '../suites/block-shadow.js';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';
import { hostStore } from './helpers.js';

/**
 * The suites replay their own times (`now` on every call, from the next whole hour on), while a
 * HostStore expires states by its own clock: with the wall clock, a 100 ms window's state written
 * 1 ms before the window's end read as gone 1 ms of real time later, and a second check at the
 * same call time was admitted again (seen: "escalates for repeat offenders", 1 run in 10). The
 * store's clock stands at the suites' start, so expiry never runs ahead of the replayed times;
 * expiry by the store's clock is test/host/bounds.test.ts's subject.
 */
const HOUR = 3_600_000;
const T0 = Math.ceil(Date.now() / HOUR) * HOUR + HOUR;
const replayed = { clock: () => T0 };

describeStoreBehaviour('HostStore', () => hostStore(replayed), { baseTime: T0 });
describeStoreBehaviour(
  'HostStore, no cache in front of LMDB',
  () => hostStore({ ...replayed, cacheKeys: 0 }),
  {
    baseTime: T0,
  },
);
describeStoreBehaviour(
  "HostStore, durability 'flush'",
  () => hostStore({ ...replayed, durability: 'flush' }),
  {
    baseTime: T0,
  },
);
describeBlockAndShadow('HostStore', () => hostStore(replayed));
