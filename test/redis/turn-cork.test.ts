// The calls of one event-loop turn share one socket write to Redis (issue 36: a socket write per check was
// ~20% of a Fastify + Redis server's CPU), and each is still answered on its own.
import { fixedWindow, Limiter } from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { clientFamilyName, type Redis, storeClient } from './client-family.js';
import { connectRedis, uniquePrefix } from './clients.js';

const client = await connectRedis();
afterAll(() => client.disconnect());

const algorithm = fixedWindow({ limit: 1, window: '1h' });
const KEYS = Array.from({ length: 16 }, (_, i) => `user:${i}`);

/**
 * Counts the writes an ioredis-family client's socket hands to the system while `during` runs:
 * Node's `Writable` calls `_write` per chunk, or `_writev` once for the chunks a cork held
 * (observing them, not replacing what they do).
 */
async function writes(redis: Redis, during: () => Promise<unknown>): Promise<number> {
  type Hook = (...args: unknown[]) => unknown;
  const stream = (redis as unknown as { stream: Record<'_write' | '_writev', Hook> }).stream;
  const originals = { _write: stream._write, _writev: stream._writev };
  let count = 0;
  for (const name of ['_write', '_writev'] as const) {
    const original = originals[name];
    stream[name] = function (this: unknown, ...args: unknown[]) {
      count++;
      return original.apply(this, args);
    };
  }
  try {
    await during();
  } finally {
    Object.assign(stream, originals);
  }
  return count;
}

describe.skipIf(clientFamilyName === 'node-redis')(
  'one write per event-loop turn (standalone ioredis family)',
  () => {
    it('sixteen checks started together leave in one socket write, each decided on its own key', async () => {
      const own = await connectRedis();
      try {
        const limiter = new Limiter({
          algorithm,
          store: new RedisStore({ client: own, prefix: uniquePrefix('turn-cork'), timeout: 5_000 }),
        });
        await limiter.check('warm-up', { now: 0 }); // the scripts' first EVAL on this connection
        let first: boolean[] = [];
        expect(
          await writes(own, async () => {
            first = (await Promise.all(KEYS.map((key) => limiter.check(key, { now: 0 })))).map(
              (d) => d.allowed,
            );
          }),
        ).toBe(1);
        expect(first).toEqual(KEYS.map(() => true));
        // The second hit of each key, in one write again: every one refused, none mistaken for another.
        const second = await Promise.all(KEYS.map((key) => limiter.check(key, { now: 1 })));
        expect(second.map((d) => [d.allowed, d.reason])).toEqual(KEYS.map(() => [false, 'rate-limited']));
        // Calls in different turns are written apart, as before.
        expect(
          await writes(own, async () => {
            await limiter.check('later:1', { now: 2 });
            await limiter.check('later:2', { now: 2 });
          }),
        ).toBe(2);
      } finally {
        own.disconnect();
      }
    });

    // One write per turn whatever its size made a closed loop of 32 callers on one client half as
    // fast as without the cork (Redis idle while the client built the whole turn, then the client
    // idle while Redis ran it); writes of at most 16 calls keep both busy (issue 36).
    it('a turn of forty checks leaves in writes of at most sixteen calls: three writes', async () => {
      const own = await connectRedis();
      try {
        const limiter = new Limiter({
          algorithm,
          store: new RedisStore({ client: own, prefix: uniquePrefix('turn-cork'), timeout: 5_000 }),
        });
        await limiter.check('warm-up', { now: 0 });
        const keys = Array.from({ length: 40 }, (_, i) => `many:${i}`);
        let allowed: boolean[] = [];
        expect(
          await writes(own, async () => {
            allowed = (await Promise.all(keys.map((key) => limiter.check(key, { now: 0 })))).map(
              (d) => d.allowed,
            );
          }),
        ).toBe(3);
        expect(allowed).toEqual(keys.map(() => true));
        const again = await Promise.all(keys.map((key) => limiter.check(key, { now: 0 })));
        expect(again.map((d) => d.allowed)).toEqual(keys.map(() => false));
      } finally {
        own.disconnect();
      }
    });

    it("a call's error reply fails that call only: the others of its write are decided", async () => {
      const own = await connectRedis();
      try {
        const errors: RedisStoreErrorEvent[] = [];
        const store = new RedisStore({
          client: own,
          prefix: uniquePrefix('turn-cork'),
          timeout: 5_000,
          onError: (e) => errors.push(e),
        });
        const limiter = new Limiter({ algorithm, store });
        await limiter.check('warm-up', { now: 0 });
        await client.rpush(store.keyFor(algorithm, 'broken'), 'x');
        const [before, broken, after] = await Promise.all(
          ['fine:1', 'broken', 'fine:2'].map((key) => limiter.check(key, { now: 0 })),
        );
        expect([before!.allowed, after!.allowed]).toEqual([true, true]);
        // The broken key is answered by the failure policy (the default: this process's own count).
        expect(broken!.allowed).toBe(true);
        expect(errors.map((e) => String(e.error))).toEqual([expect.stringContaining('WRONGTYPE')]);
        // And Redis counted the two others: their second hits are refused.
        const again = await Promise.all(['fine:1', 'fine:2'].map((key) => limiter.check(key, { now: 0 })));
        expect(again.map((d) => d.allowed)).toEqual([false, false]);
      } finally {
        own.disconnect();
      }
    });

    it("an app's fake timers (setImmediate faked, as vi.useFakeTimers() does) do not hold the write back", async () => {
      const own = await connectRedis();
      const limiter = new Limiter({
        algorithm,
        store: new RedisStore({ client: own, prefix: uniquePrefix('turn-cork'), timeout: 5_000 }),
      });
      vi.useFakeTimers({ toFake: ['setImmediate'] });
      try {
        const answered = await Promise.race([
          Promise.resolve(limiter.check('faked', { now: 0 })).then((d) => d.allowed),
          // setTimeout is not faked here: a bound on the wait, far above a loopback round trip.
          new Promise<string>((resolve) => setTimeout(() => resolve('no answer within 5 s'), 5_000)),
        ]);
        expect(answered).toBe(true);
      } finally {
        vi.useRealTimers();
        own.disconnect();
      }
    });
  },
);

describe('every client family', () => {
  it('decides a turn of mixed keys exactly (node-redis writes a tick together itself)', async () => {
    const store = new RedisStore({
      client: storeClient(client),
      prefix: uniquePrefix('turn-cork'),
      timeout: 5_000,
    });
    const limiter = new Limiter({ algorithm, store });
    const keys = [...KEYS, ...KEYS];
    const decisions = await Promise.all(keys.map((key) => limiter.check(key, { now: 0 })));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(KEYS.length);
    for (const key of KEYS) {
      expect(
        decisions.filter((d, i) => keys[i] === key && d.allowed),
        key,
      ).toHaveLength(1);
    }
  });
});
