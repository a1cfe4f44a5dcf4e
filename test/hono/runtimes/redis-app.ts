/**
 * `RedisStore` on the runtime's own TCP (ioredis over its `node:net`), on Bun and Deno: served
 * under `/redis/` by `harness.ts` next to checks-app.ts, against the suite's redis-server
 * (`REDIS_PORT`), under the test's own key prefix (`REDIS_PREFIX`: the server is shared by the
 * whole run). Workers have no such TCP (without `nodejs_compat`): not served there.
 */
import { rateLimit, tokenBucket } from '@sluice/hono';
import { RedisStore } from '@sluice/redis';
import { Hono } from 'hono';
import { Redis } from 'ioredis';

const client = new Redis({
  host: '127.0.0.1',
  port: Number(process.env.REDIS_PORT),
  enableOfflineQueue: false,
});
const store = new RedisStore({ client, prefix: process.env.REDIS_PREFIX ?? 'sluice:' });

const app = new Hono().basePath('/redis');
// Two tokens, one back every 30 minutes: no window turns while the test runs.
app.use(rateLimit({ name: 'redis', algorithm: tokenBucket({ capacity: 2, refillInterval: '1h' }), store }));
app.get('/limited', (c) => c.json({ remaining: c.get('rateLimit')?.remaining ?? null }));

export default app;
