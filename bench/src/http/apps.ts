import { createServer, type Server } from 'node:http';
import type { Store } from '@sluice/core';
import { Redis } from 'ioredis';
import { BODY, CLIENT_HEADER, type HttpSubject, LIMIT, ROUTE, WINDOW_MS } from './subjects.js';

/** A listening app and what it counted. */
export interface App {
  readonly server: Server;
  /** Store failures reported by the limiter (a row with any is invalid: it measured the fallback). */
  storeErrors(): number;
  close(): Promise<void>;
}

/**
 * @fastify/rate-limit is loaded through a specifier TypeScript does not resolve: it augments
 * Fastify's `config.rateLimit` with its own type, as @sluice/fastify does, and the two
 * augmentations cannot live in one typechecked program (the root `pnpm typecheck` includes bench/).
 */
const FASTIFY_PEER: string = '@fastify/rate-limit';

type RedisStoreCtor = new (options: { client: Redis; onError: () => void }) => Store;

/** The returning client's id, as both libraries' key functions read it. */
const clientId = (request: { headers: Record<string, string | string[] | undefined> }) =>
  request.headers[CLIENT_HEADER] as string;

type SyncedStoreCtor = new (options: { client: Redis; interval: string; onError: () => void }) => Store;

/** Builds the subject's app (in the server child) and listens on a free loopback port. */
export async function buildApp(subject: HttpSubject, redisPort: number | undefined): Promise<App> {
  let errors = 0;
  const clients: Redis[] = [];
  const redis = (): Redis => {
    if (redisPort === undefined) throw new Error(`${subject.id} needs --redis-port`);
    const client = new Redis({ host: '127.0.0.1', port: redisPort });
    clients.push(client);
    return client;
  };
  const sluiceStore = async (): Promise<Store | undefined> => {
    if (subject.store === 'synced') {
      const { SyncedStore } = (await import('@sluice/redis')) as unknown as { SyncedStore: SyncedStoreCtor };
      return new SyncedStore({ client: redis(), interval: '100ms', onError: () => errors++ });
    }
    if (subject.store !== 'redis') return undefined;
    const { RedisStore } = (await import('@sluice/redis')) as unknown as { RedisStore: RedisStoreCtor };
    // Its defaults, as users run it (100 ms timeout, breaker on). A call answered without Redis
    // (timeout, breaker) would flatter the row: `onError` only counts them, and a row with any is
    // reported invalid. The breaker opens only after failures, which are counted.
    return new RedisStore({ client: redis(), onError: () => errors++ });
  };
  const closeClients = () => {
    for (const c of clients) c.disconnect();
  };

  let server: Server;
  let close: () => Promise<void>;
  if (subject.framework === 'node') {
    const body = JSON.stringify(BODY);
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(body);
    });
    close = () => new Promise((resolve) => server.close(() => resolve()));
  } else if (subject.framework === 'fastify') {
    const { default: Fastify } = await import('fastify');
    const app = Fastify({ logger: false });
    if (subject.limiter === 'noop') {
      app.addHook('onRequest', (_request, _reply, done) => done());
    } else if (subject.limiter === 'peer') {
      const { default: fastifyRateLimit } = (await import(FASTIFY_PEER)) as {
        default: Parameters<typeof app.register>[0];
      };
      await app.register(
        fastifyRateLimit,
        subject.shape === 'returning'
          ? { max: 20, timeWindow: 10_000, keyGenerator: clientId }
          : { max: LIMIT, timeWindow: WINDOW_MS, ...(subject.store === 'redis' ? { redis: redis() } : {}) },
      );
    } else if (subject.limiter === 'sluice') {
      const { default: sluice, fixedWindow, tokenBucket } = await import('@sluice/fastify');
      const store = await sluiceStore();
      const limits =
        subject.shape === 'layered'
          ? {
              limits: [
                { name: 'second', algorithm: fixedWindow({ limit: LIMIT, window: 1000 }) },
                { name: 'minute', algorithm: fixedWindow({ limit: LIMIT, window: 60_000 }) },
                { name: 'hour', algorithm: fixedWindow({ limit: LIMIT, window: 3_600_000 }) },
              ],
            }
          : subject.shape === 'returning'
            ? { algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }), key: clientId }
            : { algorithm: fixedWindow({ limit: LIMIT, window: WINDOW_MS }) };
      await app.register(sluice, { ...limits, ...(store === undefined ? {} : { store }) });
    }
    app.get(ROUTE, async () => BODY);
    await app.listen({ port: 0, host: '127.0.0.1' });
    server = app.server;
    close = () => app.close();
  } else {
    const { default: express } = await import('express');
    const app = express();
    if (subject.limiter === 'noop') {
      app.use((_req, _res, next) => next());
    } else if (subject.limiter === 'peer') {
      const { rateLimit } = await import('express-rate-limit');
      let store: import('express-rate-limit').Store | undefined;
      if (subject.store === 'redis') {
        const { RedisStore } = await import('rate-limit-redis');
        const client = redis();
        store = new RedisStore({
          sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
        });
      }
      app.use(rateLimit({ windowMs: WINDOW_MS, limit: LIMIT, ...(store === undefined ? {} : { store }) }));
    } else if (subject.limiter === 'sluice') {
      const { rateLimit, fixedWindow } = await import('@sluice/express');
      const store = await sluiceStore();
      app.use(
        rateLimit({
          algorithm: fixedWindow({ limit: LIMIT, window: WINDOW_MS }),
          ...(store === undefined ? {} : { store }),
        }),
      );
    }
    app.get(ROUTE, (_req, res) => {
      res.json(BODY);
    });
    server = createServer(app);
    close = () => new Promise((resolve) => server.close(() => resolve()));
  }
  if (!server.listening)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
  return {
    server,
    storeErrors: () => errors,
    close: async () => {
      server.closeAllConnections();
      await close();
      closeClients();
    },
  };
}
