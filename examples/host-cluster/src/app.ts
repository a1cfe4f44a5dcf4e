import { byIp, rateLimit, tokenBucket } from '@sluice/express';
import type { HostStore } from '@sluice/host';
import express from 'express';

/**
 * The app every worker process runs. Each opens the same host store (one directory, LMDB shared by
 * every process of the machine), so the limit is one limit for the whole host: 5 at once, then 1
 * per second per client address, however many workers there are and whichever serves a request.
 */
export function createApp(store: HostStore): express.Express {
  const app = express();
  // Which worker answered (refusals included): requests are spread over all of them, the limit is one.
  app.use((_req, res, next) => {
    res.set('x-worker', String(process.pid));
    next();
  });
  app.use(
    rateLimit({
      store,
      limits: [
        {
          name: 'burst',
          key: byIp(),
          algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
        },
      ],
    }),
  );
  app.get('/', (_req, res) => {
    res.json({ hello: 'world' });
  });
  return app;
}

/** The host store's directory: one per app, on a local disk, the same for every worker. */
export function storePath(): string {
  return process.env.SLUICE_HOST_PATH ?? '/tmp/sluice-example-host-cluster';
}
