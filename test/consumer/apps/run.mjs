// The consumer apps' checks, given the packages as app.mjs (import) or app.cjs (require) loaded
// them: the core Limiter, Express and Fastify on a RedisStore (on ioredis, or on node-redis for
// app-node-redis.mjs), as installed from the tarballs.
import { once } from 'node:events';

export async function run({
  core,
  coreAdapter,
  redis,
  express: adapter,
  fastify: plugin,
  Express,
  Fastify,
  Redis,
  createClient,
}) {
  const prefix = `sluice:consumer:${process.pid}:${Date.now()}:`;
  const result = {};

  const limiter = new core.Limiter({
    limits: [{ name: 'burst', algorithm: core.tokenBucket({ capacity: 2, refillInterval: '1m' }) }],
  });
  const decisions = [];
  for (let i = 0; i < 3; i++) decisions.push((await limiter.check('user:1', { now: 1_000 })).allowed);
  result.core = decisions;

  // The adapter subpath is the same module graph as the root, in either format: an error its
  // validation throws, a guard built with a root class, are the root's own.
  try {
    coreAdapter.integerOption('cost', -1);
  } catch (error) {
    result.subpath = [error instanceof core.SluiceError, error.code];
  }
  const shedder = new core.UtilizationShedder({ timer: false });
  result.subpath.push(
    coreAdapter.buildGuard(
      'utilizationShed',
      { shedder, priority: 'low' },
      {
        access: {},
        defaults: coreAdapter.CONSOLE_DEFAULTS,
      },
    ).kind,
  );
  shedder.close();

  // ioredis (`Redis`) or node-redis (`createClient`), as each app brings.
  const client =
    createClient === undefined
      ? new Redis({
          host: '127.0.0.1',
          port: Number(process.env.REDIS_PORT),
          enableOfflineQueue: false,
          lazyConnect: true,
        })
      : createClient({ socket: { host: '127.0.0.1', port: Number(process.env.REDIS_PORT) } });
  await client.connect();
  const store = new redis.RedisStore({ client, prefix });
  try {
    const app = Express();
    app.use(
      adapter.rateLimit({ name: 'app', algorithm: core.slidingWindowLog({ limit: 5, window: '1m' }), store }),
    );
    app.get(
      '/x',
      adapter.rateLimit({
        name: 'route',
        algorithm: core.slidingWindowLog({ limit: 2, window: '1m' }),
        store,
      }),
      (_req, res) => {
        res.send('ok');
      },
    );
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address();
    result.express = [];
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`http://127.0.0.1:${port}/x`);
      await response.text();
      result.express.push([response.status, response.headers.get('ratelimit')]);
    }
    server.close();

    const fastify = Fastify();
    await fastify.register(plugin.sluice, {
      name: 'app',
      algorithm: core.slidingWindowLog({ limit: 2, window: '1m' }),
      store,
    });
    fastify.get('/y', async () => 'ok');
    result.fastify = [];
    for (let i = 0; i < 3; i++) {
      const response = await fastify.inject('/y');
      result.fastify.push([response.statusCode, response.headers.ratelimit]);
    }
    await fastify.close();
  } finally {
    await store.shutdown();
    await (createClient === undefined ? client.quit() : client.close());
  }
  return result;
}
