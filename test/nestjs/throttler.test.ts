import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { SluiceThrottlerStorage } from '@sluice/nestjs';
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
          // An hour's window (aligned to the epoch): a flood of a second or two crossing a window's
          // end would rightly admit 100 in each window; with a minute that happened 1 run in 30.
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

  it('answers the record @nestjs/throttler reads: hits, expiry and the block', async () => {
    let now = 0;
    const { MemoryStore } = await import('@sluice/core');
    const storage = new SluiceThrottlerStorage({ store: new MemoryStore({ clock: () => now }) });
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toEqual({
      totalHits: 1,
      timeToExpire: 10,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
    now = 4_000;
    expect((await storage.increment('k', 10_000, 2, 10_000, 'default')).totalHits).toBe(2);
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toEqual({
      totalHits: 3,
      timeToExpire: 6,
      isBlocked: true,
      timeToBlockExpire: 6,
    });
    // Another throttler name counts on its own.
    expect((await storage.increment('k', 10_000, 2, 10_000, 'burst')).isBlocked).toBe(false);
    now = 10_000;
    expect((await storage.increment('k', 10_000, 2, 10_000, 'default')).isBlocked).toBe(false);
    expect(() => new SluiceThrottlerStorage({} as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_MISSING_OPTION' }),
    );
  });
});
