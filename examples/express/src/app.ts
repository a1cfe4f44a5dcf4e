import { byIp, byRoute, byToken, compose, fixedWindow, rateLimit, tokenBucket } from '@sluice/express';
import express from 'express';

/** A tiny API: a per-IP burst limit on everything, a stricter limit on login, a daily quota per token. */
export function createApp(): express.Express {
  const app = express();
  // Behind a reverse proxy, trust it (and only it) so req.ip is the client: app.set('trust proxy', 1).

  app.use(
    rateLimit({
      limits: [
        // 5 requests at once, then 1 per second, per client address.
        {
          name: 'burst',
          key: byIp(),
          algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
        },
        // 1000 a day per API token; anonymous requests have no token and skip this limit.
        { name: 'daily', key: byToken(), algorithm: fixedWindow({ limit: 1000, window: '1d' }) },
      ],
    }),
  );

  app.get('/', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit?.remaining });
  });

  // Per route: 3 login attempts per minute per address and route.
  app.post(
    '/login',
    rateLimit({
      name: 'login',
      key: compose(byIp(), byRoute()),
      algorithm: fixedWindow({ limit: 3, window: '1m' }),
    }),
    (_req, res) => {
      res.json({ token: 'demo' });
    },
  );

  return app;
}
