import { describeBlockAndShadow } from '../suites/block-shadow.js';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';
import { hostStore } from './helpers.js';

describeStoreBehaviour('HostStore', () => hostStore());
describeStoreBehaviour('HostStore, no cache in front of LMDB', () => hostStore({ cacheKeys: 0 }));
describeStoreBehaviour("HostStore, durability 'flush'", () => hostStore({ durability: 'flush' }));
describeBlockAndShadow('HostStore', () => hostStore());
