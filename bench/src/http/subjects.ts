/**
 * The HTTP subjects: one minimal app per framework (one GET route answering a small JSON), bare,
 * with its popular peer and with sluice, each rate limiter on its memory store and on Redis.
 * Shared by the parent (labels, printed configuration) and the server child (which builds the app).
 *
 * Configured equivalently: a fixed window of `LIMIT` requests per `WINDOW_MS` (both peers are fixed
 * windows, so sluice runs `fixedWindow` too), keyed by the client IP (each library's default key),
 * each library's default headers on, a limit so high that nothing is refused.
 */

/** Requests per window: far above what a run can send, so every response is a 200. */
export const LIMIT = 1_000_000_000;
/** The window, in ms. */
export const WINDOW_MS = 60_000;
/** The route every app serves, and its body. */
export const ROUTE = '/';
export const BODY = { hello: 'world' } as const;

export type Framework = 'fastify' | 'express' | 'node';
export type Limiter = 'bare' | 'noop' | 'peer' | 'sluice';
export type StoreKind = 'memory' | 'redis' | 'synced';

export interface HttpSubject {
  /** `framework:limiter[:store]`, also the server child's argument. */
  readonly id: string;
  readonly framework: Framework;
  readonly limiter: Limiter;
  readonly store: StoreKind | undefined;
  readonly label: string;
  /** The exact configuration, printed into the results. */
  readonly config: string;
}

const redisClient = "new Redis({ host: '127.0.0.1', port })";

export const HTTP_SUBJECTS: readonly HttpSubject[] = [
  {
    id: 'node:bare',
    framework: 'node',
    limiter: 'bare',
    store: undefined,
    label: 'node:http, no framework (ceiling)',
    config: `http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }); res.end(JSON.stringify(${JSON.stringify(BODY)})) })`,
  },
  {
    id: 'fastify:bare',
    framework: 'fastify',
    limiter: 'bare',
    store: undefined,
    label: 'Fastify bare',
    config: `Fastify({ logger: false }); app.get('/', async () => (${JSON.stringify(BODY)}))`,
  },
  {
    id: 'fastify:noop',
    framework: 'fastify',
    limiter: 'noop',
    store: undefined,
    label: 'Fastify + no-op onRequest hook (floor)',
    config: "app.addHook('onRequest', (request, reply, done) => done()): what any hook costs",
  },
  {
    id: 'fastify:peer:memory',
    framework: 'fastify',
    limiter: 'peer',
    store: 'memory',
    label: 'Fastify + @fastify/rate-limit',
    config: `await app.register(fastifyRateLimit, { max: ${LIMIT}, timeWindow: ${WINDOW_MS} }) (global, key request.ip, default x-ratelimit-* headers)`,
  },
  {
    id: 'fastify:sluice:memory',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'memory',
    label: 'Fastify + sluice',
    config: `await app.register(sluice, { algorithm: fixedWindow({ limit: ${LIMIT}, window: ${WINDOW_MS} }) }) (MemoryStore, key byIp(), default IETF RateLimit headers)`,
  },
  {
    id: 'fastify:peer:redis',
    framework: 'fastify',
    limiter: 'peer',
    store: 'redis',
    label: 'Fastify + @fastify/rate-limit, Redis',
    config: `same, plus redis: ${redisClient}`,
  },
  {
    id: 'fastify:sluice:redis',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'redis',
    label: 'Fastify + sluice, Redis',
    config: `same, plus store: new RedisStore({ client: ${redisClient}, timeout: 10000, breaker: false, onError: count }) (deny cache off, the default; no timeout or breaker answers for Redis, as the peers have none)`,
  },
  {
    id: 'express:bare',
    framework: 'express',
    limiter: 'bare',
    store: undefined,
    label: 'Express bare',
    config: `express() (Express 5); app.get('/', (req, res) => res.json(${JSON.stringify(BODY)}))`,
  },
  {
    id: 'express:noop',
    framework: 'express',
    limiter: 'noop',
    store: undefined,
    label: 'Express + no-op middleware (floor)',
    config: 'app.use((req, res, next) => next()): what any middleware costs',
  },
  {
    id: 'express:peer:memory',
    framework: 'express',
    limiter: 'peer',
    store: 'memory',
    label: 'Express + express-rate-limit',
    config: `app.use(rateLimit({ windowMs: ${WINDOW_MS}, limit: ${LIMIT} })) (MemoryStore, key req.ip, default X-RateLimit-* headers)`,
  },
  {
    id: 'express:sluice:memory',
    framework: 'express',
    limiter: 'sluice',
    store: 'memory',
    label: 'Express + sluice',
    config: `app.use(rateLimit({ algorithm: fixedWindow({ limit: ${LIMIT}, window: ${WINDOW_MS} }) })) (MemoryStore, key byIp(), default IETF RateLimit headers)`,
  },
  {
    id: 'express:peer:redis',
    framework: 'express',
    limiter: 'peer',
    store: 'redis',
    label: 'Express + express-rate-limit, Redis (rate-limit-redis)',
    config: `same, plus store: new RedisStore({ sendCommand: (...args) => client.call(...args) }) from rate-limit-redis, client = ${redisClient}`,
  },
  {
    id: 'express:sluice:redis',
    framework: 'express',
    limiter: 'sluice',
    store: 'redis',
    label: 'Express + sluice, Redis',
    config: `same, plus store: new RedisStore({ client: ${redisClient}, timeout: 10000, breaker: false, onError: count })`,
  },
];

/**
 * sluice on the local-first SyncedStore (issue 13): decisions in process, synced to Redis every
 * 100 ms. Separate entries from the list above, compared with the same bare apps.
 */
const SYNCED_SUBJECTS: readonly HttpSubject[] = [
  {
    id: 'fastify:sluice:synced',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'synced',
    label: 'Fastify + sluice, SyncedStore (Redis, 100 ms)',
    config: `same, plus store: new SyncedStore({ client: ${redisClient}, interval: '100ms', onError: count })`,
  },
  {
    id: 'express:sluice:synced',
    framework: 'express',
    limiter: 'sluice',
    store: 'synced',
    label: 'Express + sluice, SyncedStore (Redis, 100 ms)',
    config: `same, plus store: new SyncedStore({ client: ${redisClient}, interval: '100ms', onError: count })`,
  },
];

export const ALL_HTTP_SUBJECTS: readonly HttpSubject[] = [...HTTP_SUBJECTS, ...SYNCED_SUBJECTS];

/** Subjects whose server needs the bench's redis-server. */
export const usesRedis = (s: HttpSubject) => s.store === 'redis' || s.store === 'synced';

export function httpSubject(id: string): HttpSubject {
  const found = ALL_HTTP_SUBJECTS.find((s) => s.id === id);
  if (found === undefined) throw new Error(`unknown HTTP subject ${id}`);
  return found;
}

/** Subjects that only give scale (the ceiling, the no-op floors): left out of quick runs. */
export const isReference = (s: HttpSubject) => s.framework === 'node' || s.limiter === 'noop';

/** The bare app a subject's throughput is divided by. */
export const bareOf = (s: HttpSubject) => `${s.framework}:bare`;
