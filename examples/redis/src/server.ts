import { once } from 'node:events';
import { byIp, sluice, tokenBucket } from '@sluice/fastify';
import { RedisStore } from '@sluice/redis';
import Fastify from 'fastify';
import { Redis } from 'ioredis';

// One Redis for every app process: the limit holds across the whole fleet.
// enableOfflineQueue: false makes calls fail at once while Redis is down, so the store's failure
// policy (here: fail open) answers instead of requests piling up.
const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableOfflineQueue: false });
const store = new RedisStore({ client, failurePolicy: 'allow', timeout: 100 });
// Without the offline queue, commands sent before the connection is up fail: wait for it once.
if (client.status !== 'ready') await once(client, 'ready');

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
