import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { byIp, byToken, fixedWindow, rateLimit, tokenBucket } from '@sluice/hono';
import { Hono } from 'hono';

const app = new Hono();

// Every route: 5 at once then 1 per second per address (the socket address @hono/node-server
// reports), and 1000 a day per bearer token (anonymous requests skip the daily limit).
app.use(
  rateLimit({
    limits: [
      {
        name: 'burst',
        key: byIp(),
        algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
      },
      { name: 'daily', key: byToken(), algorithm: fixedWindow({ limit: 1000, window: '1d' }) },
    ],
  }),
);

app.get('/', (c) => c.json({ hello: 'world', remaining: c.get('rateLimit')?.remaining }));

// This route's own limit, on top of the app's: 3 login attempts a minute per address.
app.post('/login', rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 3, window: '1m' }) }), (c) =>
  c.json({ token: 'demo' }),
);

const server = serve(
  { fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: '127.0.0.1' },
  (info: AddressInfo) => {
    console.log(`listening on http://127.0.0.1:${info.port}`);
  },
);
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
