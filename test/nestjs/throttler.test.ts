import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { MemoryStore, SluiceThrottlerStorage, type ThrottlerRecord } from '@sluice/nestjs';
import { RedisStore } from '@sluice/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { connectRedis, uniquePrefix } from '../redis/clients.js';

const redis = await connectRedis();
afterAll(() => {
  redis.disconnect();
});

/** GETs `url` `count` times at once over `sockets` keep-alive connections; the statuses. */
async function flood(url: string, count: number, sockets: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  try {
    return await Promise.all(
      Array.from(
        { length: count },
        () =>
          new Promise<number>((resolve, reject) => {
            const request = httpRequest(url, { agent }, (response) => {
              response.resume();
              response.on('end', () => resolve(response.statusCode!));
            });
            request.on('error', reject);
            request.end();
          }),
      ),
    );
  } finally {
    agent.destroy();
  }
}

describe('SluiceThrottlerStorage with @nestjs/throttler', () => {
  it('a flood of 1000 requests against a limit of 100 on Redis admits exactly 100 (nestjs/throttler#1303)', async () => {
    // The issue: a get-then-set Redis storage let ~400 of 1000 flood requests through. Each
    // increment here is one atomic script, so concurrent requests never read the same count.
    // Fail closed with a long timeout: on a loaded machine a slow answer must not pass as a
    // fail-open admission (the default 'allow' after 100 ms), or be mistaken for a race.
    const store = new RedisStore({
      client: redis,
      prefix: uniquePrefix('throttler'),
      breaker: false,
      timeout: 10_000,
      failurePolicy: 'deny',
    });
    class Hello {
      hello() {
        return { ok: true };
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(Hello.prototype, 'hello')!;
    Get()(Hello.prototype, 'hello', descriptor);
    Controller()(Hello);
    class AppModule {}
    Module({
      imports: [
        ThrottlerModule.forRoot({
          // An hour's window: the flood's verdict never depends on how long it takes to send.
          throttlers: [{ ttl: 3_600_000, limit: 100 }],
          storage: new SluiceThrottlerStorage({ store }),
        }),
      ],
      controllers: [Hello],
      providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    })(AppModule);
    const app = await NestFactory.create(AppModule, { logger: false });
    try {
      await app.listen(0, '127.0.0.1');
      const { port } = app.getHttpServer().address() as AddressInfo;
      const statuses = await flood(`http://127.0.0.1:${port}/`, 1000, 100);
      const admitted = statuses.filter((status) => status === 200).length;
      const refused = statuses.filter((status) => status === 429).length;
      expect([admitted, refused]).toEqual([100, 900]);
    } finally {
      await app.close();
      await store.shutdown();
    }
  });

  it('answers the record @nestjs/throttler reads: hits, expiry and the block (blockDuration from the refusal on)', async () => {
    let now = 0;
    const storage = new SluiceThrottlerStorage({ store: new MemoryStore({ clock: () => now }) });
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toEqual({
      totalHits: 1,
      timeToExpire: 10,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
    now = 4_000;
    expect((await storage.increment('k', 10_000, 2, 10_000, 'default')).totalHits).toBe(2);
    // Over the limit: blocked for blockDuration (10 s) from now, as the default storage blocks.
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toMatchObject({
      totalHits: 3,
      isBlocked: true,
      timeToBlockExpire: 10,
    });
    // Another throttler name counts on its own.
    expect((await storage.increment('k', 10_000, 2, 10_000, 'burst')).isBlocked).toBe(false);
    // The window has passed, the block has not (it was 9 s out of a fixed window here before).
    now = 10_000;
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 4,
    });
    now = 14_000;
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toMatchObject({
      totalHits: 1,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
    expect(() => new SluiceThrottlerStorage({} as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_MISSING_OPTION' }),
    );
  });

  it('regression: each hit expires ttl after it happened, as the default storage counts; a burst across a wall-clock boundary is not doubled (issue 32.7)', async () => {
    // 2 per 10 s; the burst straddles 1_000_010_000, a multiple of 10 s. Counted in windows aligned
    // to the clock, it passed 4 in 150 ms (a login throttle doubled).
    let now = 1_000_009_900;
    const storage = new SluiceThrottlerStorage({ store: new MemoryStore({ clock: () => now }) });
    const blocked: boolean[] = [];
    for (const at of [1_000_009_900, 1_000_009_950, 1_000_010_000, 1_000_010_050]) {
      now = at;
      blocked.push((await storage.increment('login', 10_000, 2, 0, 'default')).isBlocked);
    }
    expect(blocked).toEqual([false, false, true, true]);
    // 10 s after the first hit, one place is back; after the second, two.
    now = 1_000_019_900;
    expect((await storage.increment('login', 10_000, 2, 0, 'default')).isBlocked).toBe(false);
    expect((await storage.increment('login', 10_000, 2, 0, 'default')).isBlocked).toBe(true);
  });

  it('regression: blockDuration longer than the window keeps the client out for the block (issue 32.7: back after 1 s of 5)', async () => {
    let now = 0;
    const storage = new SluiceThrottlerStorage({ store: new MemoryStore({ clock: () => now }) });
    expect((await storage.increment('k', 1_000, 1, 5_000, 'default')).isBlocked).toBe(false);
    now = 100;
    expect(await storage.increment('k', 1_000, 1, 5_000, 'default')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 5,
    });
    now = 1_500;
    expect(await storage.increment('k', 1_000, 1, 5_000, 'default')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 4,
    });
    now = 5_100;
    expect((await storage.increment('k', 1_000, 1, 5_000, 'default')).isBlocked).toBe(false);
  });

  it('regression: a block shorter than ttl forgets the hits before it, as the default storage does (the key starts afresh)', async () => {
    // 3 per 10 s, blocked 2 s. The default storage zeroes the count when the block ends; a log
    // kept through the block refused the key until 10 s after its first hit.
    let now = 0;
    const storage = new SluiceThrottlerStorage({ store: new MemoryStore({ clock: () => now }) });
    for (; now < 3; now++)
      expect((await storage.increment('k', 10_000, 3, 2_000, 'default')).isBlocked).toBe(false);
    expect(await storage.increment('k', 10_000, 3, 2_000, 'default')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 2,
    });
    now = 2_003;
    const after: ThrottlerRecord[] = [];
    for (let n = 0; n < 4; n++) after.push(await storage.increment('k', 10_000, 3, 2_000, 'default'));
    expect(after.map((r) => [r.totalHits, r.isBlocked])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ]);
  });
});
