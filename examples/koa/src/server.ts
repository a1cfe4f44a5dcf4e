import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { byIp, byToken, fixedWindow, rateLimit, tokenBucket } from '@sluice/koa';
import Koa from 'koa';

const app = new Koa();

// Every route: 5 at once then 1 per second per address, and 1000 a day per bearer token
// (anonymous requests skip the daily limit).
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

const router = new Router();
router.get('/', (ctx) => {
  ctx.body = { hello: 'world', remaining: ctx.state.rateLimit?.remaining };
});
// This route's own limit, on top of the app's: 3 login attempts a minute per address.
router.post(
  '/login',
  rateLimit({ name: 'login', algorithm: fixedWindow({ limit: 3, window: '1m' }) }),
  (ctx) => {
    ctx.body = { token: 'demo' };
  },
);
app.use(router.routes());

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
await once(server, 'listening');
console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
