/**
 * An app moving from express-rate-limit keeps its store: rate-limit-redis (the store most of them
 * run) behind `rateLimit(fromExpressRateLimit({ store }))`, on the test harness's real
 * redis-server. Counts, outcome give-backs, resetKey/getKey, and a store that fails under traffic.
 */
import { fromExpressRateLimit, rateLimit } from '@sluice/express';
import { RedisStore } from 'rate-limit-redis';
import supertest from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRedis, type Redis, uniquePrefix } from '../redis/clients.js';
import { app, statuses } from './erl-app.js';

const clients: Redis[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});

async function redisStore(): Promise<{ store: RedisStore; client: Redis }> {
  const client = await connectRedis();
  clients.push(client);
  const store = new RedisStore({
    prefix: uniquePrefix('erl-redis'),
    sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
  });
  return { store, client };
}

describe('rate-limit-redis behind fromExpressRateLimit', () => {
  it('counts in Redis: refusals, headers, getKey and resetKey', async () => {
    const { store } = await redisStore();
    const limiter = rateLimit(fromExpressRateLimit({ store, limit: 2, keyGenerator: () => 'client' }));
    const served = app(limiter);
    const first = await supertest(served).get('/');
    expect([first.status, first.headers['x-ratelimit-remaining']]).toEqual([200, '1']);
    expect(await statuses(served, '/', 2)).toEqual([200, 429]);
    expect((await limiter.getKey('client'))?.totalHits).toBe(3);
    await limiter.resetKey('client');
    expect(await statuses(served, '/', 1)).toEqual([200]);
  });

  it('skipFailedRequests gives a failed request its hit back in Redis', async () => {
    const { store } = await redisStore();
    const limiter = rateLimit(
      fromExpressRateLimit({ store, limit: 2, skipFailedRequests: true, keyGenerator: () => 'client' }),
    );
    const served = app(limiter);
    expect(await statuses(served, '/fail', 3)).toEqual([400, 400, 400]);
    await expect.poll(async () => (await limiter.getKey('client'))?.totalHits).toBe(0);
    expect(await statuses(served, '/', 3)).toEqual([200, 200, 429]);
  });

  it('Redis gone: next(error), the app answers 500; with passOnStoreError the request is served', async () => {
    const { store, client } = await redisStore();
    const errors: unknown[] = [];
    const logger = { error: (error: unknown) => errors.push(error), warn: () => {} };
    const strict = app(rateLimit(fromExpressRateLimit({ store, logger })));
    const lenient = app(rateLimit(fromExpressRateLimit({ store, logger, passOnStoreError: true })));
    expect((await supertest(strict).get('/')).status).toBe(200);
    client.disconnect();
    const failed = await supertest(strict).get('/');
    // ioredis's own words depend on how far the disconnect got ("Connection is closed.", "Stream isn't writeable…").
    expect(failed.status).toBe(500);
    expect(failed.text).toMatch(/^app error handler: \S/);
    expect(failed.headers['retry-after']).toBeUndefined();
    expect((await supertest(lenient).get('/')).status).toBe(200);
    expect(errors).toHaveLength(1);
  });
});
