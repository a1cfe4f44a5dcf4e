import { byIp, sluice, tokenBucket } from '@sluice/fastify';
import { RedisStore } from '@sluice/redis';
import Fastify from 'fastify';
import { Redis } from 'ioredis';

// One Redis for every app process: the limit holds across the whole fleet.
// enableOfflineQueue: false makes calls fail at once while Redis is down, so the store's failure
// policy answers instead of requests piling up (and running late, consuming, when Redis returns).
const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableOfflineQueue: false });
client.on('error', (error) => console.warn('redis:', error.message));
// Not waiting for the connection: the app starts even while Redis is down. Requests made before
// the client is ready wait for it (readyTimeout, 2 s); while Redis is away (or slower than the
// 100 ms timeout), this process decides the same limits itself (failurePolicy 'local') and the
// store says so on console.warn.
const store = new RedisStore({ client });

const app = Fastify({ logger: { level: 'warn' } });
await app.register(sluice, {
  store,
  limits: [
    {
      name: 'burst',
      key: byIp(),
      algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
    },
  ],
});
app.get('/', async (request) => ({ hello: 'world', remaining: request.rateLimit?.remaining }));
app.addHook('onClose', async () => {
  await store.shutdown();
  client.disconnect();
});

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`listening on ${address}`);
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
