import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { leakyBucketQueue, type Store } from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectRedis, uniquePrefix } from '../redis/clients.js';
import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import { Probe, type TestApp } from './harness.js';
import { subjects } from './subjects.js';

// Delay mode with clients that leave, on a real Redis hung with SIGSTOP and real servers, in every
// adapter: a request whose client is gone must give back the queue slot it took and never reach
// the handler, whether the client left while Redis was hung or while the request was held.

// Checked every 5 ms (vi.waitFor's default 50 ms was most of each wait).
const WAIT = { timeout: 15_000, interval: 5 };

/** Counts the store's consume calls started and refunds completed, passing everything through. */
function counting(store: Store) {
  const seen = { consumes: 0, refunded: 0 };
  const counted: Store = {
    consume: (calls, now) => {
      seen.consumes++;
      return store.consume(calls, now);
    },
    peek: (calls, now) => store.peek(calls, now),
    reset: (calls) => store.reset(calls),
    refund: async (calls, now) => {
      await store.refund!(calls, now);
      seen.refunded++;
    },
    shutdown: () => store.shutdown(),
  };
  return { store: counted, seen };
}

/** GET on its own connection, never read: the test destroys it. */
function leavingRequest(url: string) {
  const request = httpRequest(url, { agent: false });
  request.on('error', () => undefined);
  request.end();
  return request;
}

let server: RedisProcess;
let client: Redis;
beforeAll(async () => {
  server = await startRedis();
  client = await connectRedis(server.port);
});
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

for (const subject of subjects) {
  describe(`${subject.name}: clients leaving a delayed request, Redis hung (SIGSTOP)`, () => {
    let app: TestApp | undefined;
    afterEach(async () => {
      server.resume();
      await app?.close();
      app = undefined;
    });

    const queue = () => leakyBucketQueue({ rate: 1, period: '1s', burst: 1, queue: 10 });
    const redisStore = () =>
      counting(new RedisStore({ client, prefix: uniquePrefix('leaves'), timeout: 10_000, breaker: false }));

    it('left while Redis was hung: every slot is given back and no handler runs', async () => {
      const { store, seen } = redisStore();
      const probe = new Probe();
      const holds: number[] = [];
      app = await subject.build({
        options: {
          name: 'q',
          algorithm: queue(),
          store,
          onLimit: 'delay',
          hold: async (ms) => {
            holds.push(ms);
          },
        },
        probe,
        routes: [{ method: 'GET', path: '/' }],
      });
      const base = await app.listen();
      server.pause();
      const leaving = Array.from({ length: 5 }, () => leavingRequest(`${base}/`));
      await vi.waitFor(() => expect(seen.consumes).toBe(5), WAIT);
      for (const request of leaving) request.destroy();
      await vi.waitFor(async () => expect(await app!.connections()).toBe(0), WAIT);
      server.resume();
      // Each departed request is either refunded (fixed) or handled (the defect): wait for all 5.
      await vi.waitFor(() => expect(seen.refunded + probe.handled.length).toBeGreaterThanOrEqual(5), WAIT);
      expect(probe.handled).toEqual([]);
      expect(seen.refunded).toBe(5);
      const next = await app.request('GET', '/');
      // Every slot was given back: admitted at once, the whole queue left (it waited 5 s before).
      expect([next.status, next.headers.ratelimit]).toEqual([200, '"q";r=10;t=1']);
      expect(holds).toEqual([]);
      expect(probe.handled).toEqual(['/']);
    });

    it('left while held: every slot is given back and no handler runs', async () => {
      const { store, seen } = redisStore();
      const probe = new Probe();
      const holds: number[] = [];
      app = await subject.build({
        options: {
          name: 'q',
          algorithm: queue(),
          store,
          onLimit: 'delay',
          // The five leaving requests are held until their clients go (the abort ends the hold);
          // later holds end at once.
          hold: (ms, signal) => {
            holds.push(ms);
            return holds.length <= 5 ? sleep(60_000, undefined, { signal }) : Promise.resolve();
          },
        },
        probe,
        routes: [{ method: 'GET', path: '/' }],
      });
      const base = await app.listen();
      // The burst: admitted at once, handled.
      expect((await app.request('GET', '/')).status).toBe(200);
      server.pause();
      const leaving = Array.from({ length: 5 }, () => leavingRequest(`${base}/`));
      await vi.waitFor(() => expect(seen.consumes).toBe(6), WAIT);
      server.resume();
      await vi.waitFor(() => expect(holds).toHaveLength(5), WAIT);
      for (const request of leaving) request.destroy();
      await vi.waitFor(() => expect(seen.refunded + probe.handled.length).toBeGreaterThanOrEqual(6), WAIT);
      expect(probe.handled).toEqual(['/']);
      expect(seen.refunded).toBe(5);
      const next = await app.request('GET', '/');
      expect(next.status).toBe(200);
      // Queued behind the burst's unit only (it drains within 1 s), not behind the departed five.
      expect(holds).toHaveLength(6);
      expect(holds[5]).toBeLessThanOrEqual(1000);
      expect(probe.handled).toEqual(['/', '/']);
    });
  });
}
