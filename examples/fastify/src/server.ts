import { byIp, byToken, fixedWindow, sluice, tokenBucket } from '@sluice/fastify';
import Fastify from 'fastify';

const app = Fastify({ logger: { level: 'warn' } });

// Global limits for every route registered after the plugin: 5 at once then 1 per second per
// address, and 1000 a day per bearer token (anonymous requests skip the daily limit).
await app.register(sluice, {
  limits: [
    {
      name: 'burst',
      key: byIp(),
      algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
    },
    { name: 'daily', key: byToken(), algorithm: fixedWindow({ limit: 1000, window: '1d' }) },
  ],
});

app.get('/', async (request) => ({ hello: 'world', remaining: request.rateLimit?.remaining }));

// Adds a stricter limit to this route only (the global ones still apply).
app.post(
  '/login',
  {
    config: {
      rateLimit: { limits: [{ name: 'login', algorithm: fixedWindow({ limit: 3, window: '1m' }) }] },
    },
  },
  async () => ({ token: 'demo' }),
);

// Exempt from every limit.
app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`listening on ${address}`);
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
