/**
 * node-redis (`redis` 5 and 6) as the store's client: what only that family has (EVALSHA with the
 * EVAL fallback, its error classes, its connection states), on a real standalone server and the
 * test Cluster. The shared suites (behaviour, differential, refunds, leases, concurrency) also run
 * on it: the `node-redis` project of vitest.config.ts.
 */
import { Limiter, tokenBucket } from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { createClient as createClient6, createCluster as createCluster6 } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import { uniquePrefix } from './clients.js';

// Typed as version 6's factories so the suite can call either; that the store takes each version's
// clients without a cast is checked in client-types.test.ts.
const VERSIONS = [
  { version: 6, createClient: createClient6, createCluster: createCluster6 },
  {
    version: 5,
    createClient: createClient5 as unknown as typeof createClient6,
    createCluster: createCluster5 as unknown as typeof createCluster6,
  },
] as const;

const T0 = Date.UTC(2026, 0, 1);
const bucket = tokenBucket({ capacity: 3, refillInterval: '1h' });

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

for (const { version, createClient, createCluster } of VERSIONS) {
  describe(`node-redis ${version}`, () => {
    const port = inject('redisPort');
    const rootNodes = inject('redisClusterPorts').map((p) => ({ socket: { host: '127.0.0.1', port: p } }));
    const open: { destroy(): void; isOpen: boolean }[] = [];
    afterAll(() => {
      for (const client of open) if (client.isOpen) client.destroy();
    });

    async function standalone() {
      const client = createClient({ socket: { host: '127.0.0.1', port } });
      client.on('error', () => {});
      open.push(client);
      await client.connect();
      return client;
    }

    async function cluster() {
      const client = createCluster({ rootNodes });
      client.on('error', () => {});
      open.push(client);
      await client.connect();
      return client;
    }

    it('a client and a cluster are taken as they are, and decide exactly in one script', async () => {
      for (const client of [await standalone(), await cluster()]) {
        const errors: RedisStoreErrorEvent[] = [];
        const store = new RedisStore({
          client,
          prefix: uniquePrefix(`nr${version}`),
          failurePolicy: 'deny',
          timeout: 5_000,
          onError: (event) => errors.push(event),
        });
        const limiter = new Limiter({
          limits: [
            { name: 'a', algorithm: bucket },
            { name: 'b', algorithm: tokenBucket({ capacity: 2, refillInterval: '1h' }) },
          ],
          store,
        });
        const allowed = [];
        for (let i = 0; i < 4; i++) allowed.push((await limiter.check('user', { now: T0 + i })).allowed);
        expect(allowed).toEqual([true, true, false, false]);
        expect((await limiter.peek('user', { now: T0 + 4 })).limits.map((d) => d.remaining)).toEqual([1, 0]);
        expect(errors).toEqual([]);
      }
    });

    it('runs a script the server forgot (SCRIPT FLUSH) through EVAL, without an error', async () => {
      const client = await standalone();
      const errors: RedisStoreErrorEvent[] = [];
      const store = new RedisStore({
        client,
        prefix: uniquePrefix('flush'),
        onError: (e) => errors.push(e),
        timeout: 5_000,
      });
      const limiter = new Limiter({ algorithm: bucket, store });
      expect((await limiter.check('k', { now: T0 })).remaining).toBe(2);
      await client.scriptFlush();
      expect((await limiter.check('k', { now: T0 })).remaining).toBe(1);
      expect(errors).toEqual([]);
    });

    it('a Redis error reply (WRONGTYPE) goes to the policy and is not counted as Redis being away', async () => {
      const client = await standalone();
      const prefix = uniquePrefix('wrongtype');
      const errors: RedisStoreErrorEvent[] = [];
      const store = new RedisStore({
        client,
        prefix,
        failurePolicy: 'deny',
        breaker: { failures: 1, cooldown: 60_000 },
        onError: (event) => errors.push(event),
      });
      const limiter = new Limiter({ algorithm: bucket, store });
      await limiter.check('k', { now: T0 });
      const [key] = await client.keys(`${prefix}*`);
      await client.del(key!);
      await client.lPush(key!, 'not a bucket');
      const refused = await limiter.check('k', { now: T0 });
      expect(refused).toMatchObject({ allowed: false, reason: 'store-unavailable' });
      expect(errors).toHaveLength(1);
      expect(String((errors[0]!.error as Error).message)).toMatch(/WRONGTYPE/);
      // One failure would open this breaker: a reply is Redis answering, so it stays closed.
      expect(store.breakerState).toBe('closed');
    });

    it('calls made before connect() wait for the client to be ready', async () => {
      const client = createClient({ socket: { host: '127.0.0.1', port } });
      client.on('error', () => {});
      open.push(client);
      const errors: RedisStoreErrorEvent[] = [];
      const store = new RedisStore({
        client,
        prefix: uniquePrefix('early'),
        failurePolicy: 'deny',
        onError: (event) => errors.push(event),
      });
      const limiter = new Limiter({ algorithm: bucket, store });
      const early = Array.from({ length: 5 }, () => limiter.check('k', { now: T0 }));
      await client.connect();
      const decisions = await Promise.all(early);
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
      expect(errors).toEqual([]);
    });

    describe('when Redis goes away', () => {
      let server: RedisProcess;
      afterEach(async () => {
        await server.stop();
      });

      it('answers by the failure policy, reports each call, and opens the breaker', async () => {
        server = await startRedis();
        const client = createClient({
          socket: { host: '127.0.0.1', port: server.port, reconnectStrategy: 50 },
        });
        client.on('error', () => {});
        open.push(client);
        await client.connect();
        const errors: RedisStoreErrorEvent[] = [];
        const store = new RedisStore({
          client,
          timeout: 100,
          failurePolicy: 'deny',
          breaker: { failures: 2, cooldown: 60_000 },
          onError: (event) => errors.push(event),
        });
        const limiter = new Limiter({ algorithm: bucket, store });
        expect((await limiter.check('k', { now: T0 })).allowed).toBe(true);
        await server.kill();
        const answers = [];
        for (let i = 0; i < 3; i++) answers.push(await limiter.check('k', { now: T0 }));
        expect(answers.map((d) => d.reason)).toEqual([
          'store-unavailable',
          'store-unavailable',
          'store-unavailable',
        ]);
        // Two calls reached the client and failed; the third met the open breaker (no report).
        expect(errors.map((e) => e.operation)).toEqual(['consume', 'consume']);
        expect(store.breakerState).toBe('open');
      });
    });
  });
}
