import type { Store } from '@sluice/core';
import { SyncedStore } from '@sluice/redis';
import { afterAll, afterEach, beforeEach, describe } from 'vitest';
import { connectRedis, uniquePrefix } from '../redis/clients.js';
import { featuresSuite } from './features-suite.js';
import type { AppSpec, SuiteFixture, TestApp } from './harness.js';
import { subjects } from './subjects.js';

// Issue 14's features (per-request plans, count by outcome, settle, peek and reset) on the
// local-first SyncedStore, through every adapter: they need the store's refund and charge, which
// a SyncedStore lacked (count: 'failed' counted every request). The store's timer is off and the
// fake clock is its clock; decisions are local, so no sync is needed for one process's view (and
// none reaches Redis before the store's shutdown: one Redis serves, a Cluster would add nothing;
// SyncedStore's own Cluster tests are test/redis/synced-store.test.ts).
const standalone = await connectRedis();
afterAll(() => {
  standalone.disconnect();
});

for (const [name, client] of [['Redis', standalone]] as const) {
  for (const subject of subjects) {
    describe(`${subject.name} on SyncedStore (${name})`, () => {
      let now = 0;
      let store: Store;
      let app: TestApp | undefined;
      beforeEach(() => {
        now = 0;
        store = new SyncedStore({
          client,
          clock: () => now,
          interval: 0,
          prefix: uniquePrefix(`features-synced-${name}`),
          timeout: 2000,
          breaker: false,
        });
      });
      afterEach(async () => {
        await app?.close();
        app = undefined;
        await store.shutdown();
      });
      const fixture: SuiteFixture = {
        build: async (spec: AppSpec) => {
          app = await subject.build(spec);
          return app;
        },
        app: () => app!,
        store: () => store,
        setNow: (ms) => {
          now = ms;
        },
      };
      featuresSuite(fixture, ['slidingWindowLog']);
    });
  }
}
