/**
 * The HTTP subjects: one minimal app per framework (one GET route answering a small JSON), bare,
 * with its popular peer and with sluice, each rate limiter on its memory store and on Redis, each
 * with its defaults. Shared by the parent (labels, printed configuration) and the server child
 * (which builds the app).
 *
 * Configured equivalently: a fixed window of `LIMIT` requests per `WINDOW_MS` (both peers are fixed
 * windows, so sluice runs `fixedWindow` too), keyed by the client IP (each library's default key),
 * each library's default headers on, a limit so high that nothing is refused. Two more shapes, on
 * Fastify: three layered limits on the one key (sluice only: @fastify/rate-limit applies one limit
 * per request), and returning clients (`CLIENTS` API keys in turn, each under a real limit).
 */

/** Requests per window: far above what a run can send, so every response is a 200. */
export const LIMIT = 1_000_000_000;
/** The window, in ms. */
export const WINDOW_MS = 60_000;
/** The route every app serves, and its body. */
export const ROUTE = '/';
export const BODY = { hello: 'world' } as const;
/**
 * Returning clients: each request carries the next of `CLIENTS` ids in `CLIENT_HEADER`, in turn,
 * so a client comes back every `CLIENTS / (req/s)` seconds: under its limit of 20 per 10 s up to
 * 100,000 req/s (2 per second each; a bare Fastify app serves ~60,000 on a quiet 2-core machine),
 * about 1 per second each at 50,000 req/s, and its bucket is full again when it returns (the path
 * issue #16 found re-inserting every key). Half the memory store's default `maxKeys`.
 */
export const CLIENTS = 50_000;
export const CLIENT_HEADER = 'x-client-id';

export type Framework = 'fastify' | 'express' | 'node';
export type Limiter = 'bare' | 'noop' | 'peer' | 'sluice';
export type StoreKind = 'memory' | 'redis' | 'synced';
/**
 * What is limited: one limit on the one client IP (the load generator's), three layered limits on
 * it, or `CLIENTS` returning clients under a real limit each.
 */
export type Shape = 'one-limit' | 'layered' | 'returning';

export interface HttpSubject {
  /** `framework:limiter[:store][:shape]`, also the server child's argument. */
  readonly id: string;
  readonly framework: Framework;
  readonly limiter: Limiter;
  readonly store: StoreKind | undefined;
  readonly shape: Shape;
  readonly label: string;
  /** The exact configuration, printed into the results. */
  readonly config: string;
}

const redisClient = "new Redis({ host: '127.0.0.1', port })";
const sluiceRedis = `new RedisStore({ client: ${redisClient}, onError: count }) (its defaults: 100 ms timeout, breaker on, deny cache off; onError only counts, and a row with any store error is invalid)`;
const returningKey = `(request) => request.headers['${CLIENT_HEADER}']`;

const subject = (s: Omit<HttpSubject, 'shape'> & { shape?: Shape }): HttpSubject => ({
  shape: 'one-limit',
  ...s,
});

/**
 * sluice on the local-first SyncedStore (issue 13): decisions in process, synced to Redis every
 * 100 ms. Kept apart from the list below, compared with the same bare apps.
 */
const syncedStore = `new SyncedStore({ client: ${redisClient}, interval: '100ms', onError: count })`;
const SYNCED_SUBJECTS: readonly HttpSubject[] = [
  subject({
    id: 'fastify:sluice:synced',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'synced',
    label: 'Fastify + sluice, SyncedStore (Redis, 100 ms)',
    config: `same, plus store: ${syncedStore}`,
  }),
  subject({
    id: 'express:sluice:synced',
    framework: 'express',
    limiter: 'sluice',
    store: 'synced',
    label: 'Express + sluice, SyncedStore (Redis, 100 ms)',
    config: `same, plus store: ${syncedStore}`,
  }),
];

/** Subjects whose server needs the bench's redis-server. */
export const usesRedis = (s: HttpSubject) => s.store === 'redis' || s.store === 'synced';

export const HTTP_SUBJECTS: readonly HttpSubject[] = [
  subject({
    id: 'node:bare',
    framework: 'node',
    limiter: 'bare',
    store: undefined,
    label: 'node:http, no framework (ceiling)',
    config: `http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }); res.end(JSON.stringify(${JSON.stringify(BODY)})) })`,
  }),
  subject({
    id: 'fastify:bare',
    framework: 'fastify',
    limiter: 'bare',
    store: undefined,
    label: 'Fastify bare',
    config: `Fastify({ logger: false }); app.get('/', async () => (${JSON.stringify(BODY)}))`,
  }),
  subject({
    id: 'fastify:noop',
    framework: 'fastify',
    limiter: 'noop',
    store: undefined,
    label: 'Fastify + no-op onRequest hook (floor)',
    config: "app.addHook('onRequest', (request, reply, done) => done()): what any hook costs",
  }),
  subject({
    id: 'fastify:peer:memory',
    framework: 'fastify',
    limiter: 'peer',
    store: 'memory',
    label: 'Fastify + @fastify/rate-limit',
    config: `await app.register(fastifyRateLimit, { max: ${LIMIT}, timeWindow: ${WINDOW_MS} }) (global, key request.ip, default x-ratelimit-* headers)`,
  }),
  subject({
    id: 'fastify:sluice:memory',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'memory',
    label: 'Fastify + sluice',
    config: `await app.register(sluice, { algorithm: fixedWindow({ limit: ${LIMIT}, window: ${WINDOW_MS} }) }) (MemoryStore, key byIp(), default IETF RateLimit headers)`,
  }),
  subject({
    id: 'fastify:sluice:memory:layered',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'memory',
    shape: 'layered',
    label: 'Fastify + sluice, 3 layered limits',
    config: `await app.register(sluice, { limits: [{ name: 'second', algorithm: fixedWindow({ limit: ${LIMIT}, window: 1000 }) }, { name: 'minute', … window: 60000 }, { name: 'hour', … window: 3600000 }] }) (one key, byIp(); @fastify/rate-limit has no equivalent: one limit per request)`,
  }),
  subject({
    id: 'fastify:peer:redis',
    framework: 'fastify',
    limiter: 'peer',
    store: 'redis',
    label: 'Fastify + @fastify/rate-limit, Redis',
    config: `same, plus redis: ${redisClient} (its defaults: skipOnError false)`,
  }),
  subject({
    id: 'fastify:sluice:redis',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'redis',
    label: 'Fastify + sluice, Redis',
    config: `same, plus store: ${sluiceRedis}`,
  }),
  subject({
    id: 'fastify:sluice:redis:layered',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'redis',
    shape: 'layered',
    label: 'Fastify + sluice, 3 layered limits, Redis',
    config: `the 3 layered limits, plus store: ${sluiceRedis}`,
  }),
  subject({
    id: 'fastify:bare:returning',
    framework: 'fastify',
    limiter: 'bare',
    store: undefined,
    shape: 'returning',
    label: 'Fastify bare, returning clients',
    config: `Fastify bare, loaded with ${CLIENTS.toLocaleString('en')} ${CLIENT_HEADER} values in turn`,
  }),
  subject({
    id: 'fastify:peer:memory:returning',
    framework: 'fastify',
    limiter: 'peer',
    store: 'memory',
    shape: 'returning',
    label: 'Fastify + @fastify/rate-limit, returning clients',
    config: `await app.register(fastifyRateLimit, { max: 20, timeWindow: 10000, keyGenerator: ${returningKey} }) (its default LRU of 5,000 keys)`,
  }),
  subject({
    id: 'fastify:sluice:memory:returning',
    framework: 'fastify',
    limiter: 'sluice',
    store: 'memory',
    shape: 'returning',
    label: 'Fastify + sluice, returning clients',
    config: `await app.register(sluice, { algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }), key: ${returningKey} }) (MemoryStore, default maxKeys 100,000)`,
  }),
  subject({
    id: 'express:bare',
    framework: 'express',
    limiter: 'bare',
    store: undefined,
    label: 'Express bare',
    config: `express() (Express 5); app.get('/', (req, res) => res.json(${JSON.stringify(BODY)}))`,
  }),
  subject({
    id: 'express:noop',
    framework: 'express',
    limiter: 'noop',
    store: undefined,
    label: 'Express + no-op middleware (floor)',
    config: 'app.use((req, res, next) => next()): what any middleware costs',
  }),
  subject({
    id: 'express:peer:memory',
    framework: 'express',
    limiter: 'peer',
    store: 'memory',
    label: 'Express + express-rate-limit',
    config: `app.use(rateLimit({ windowMs: ${WINDOW_MS}, limit: ${LIMIT} })) (MemoryStore, key req.ip, default X-RateLimit-* headers)`,
  }),
  subject({
    id: 'express:sluice:memory',
    framework: 'express',
    limiter: 'sluice',
    store: 'memory',
    label: 'Express + sluice',
    config: `app.use(rateLimit({ algorithm: fixedWindow({ limit: ${LIMIT}, window: ${WINDOW_MS} }) })) (MemoryStore, key byIp(), default IETF RateLimit headers)`,
  }),
  subject({
    id: 'express:peer:redis',
    framework: 'express',
    limiter: 'peer',
    store: 'redis',
    label: 'Express + express-rate-limit, Redis (rate-limit-redis)',
    config: `same, plus store: new RedisStore({ sendCommand: (...args) => client.call(...args) }) from rate-limit-redis, client = ${redisClient}`,
  }),
  subject({
    id: 'express:sluice:redis',
    framework: 'express',
    limiter: 'sluice',
    store: 'redis',
    label: 'Express + sluice, Redis',
    config: `same, plus store: ${sluiceRedis}`,
  }),
  ...SYNCED_SUBJECTS,
];

export function httpSubject(id: string): HttpSubject {
  const found = HTTP_SUBJECTS.find((s) => s.id === id);
  if (found === undefined) throw new Error(`unknown HTTP subject ${id}`);
  return found;
}

/** Subjects that only give scale (the ceiling, the no-op floors). */
export const isReference = (s: HttpSubject) => s.framework === 'node' || s.limiter === 'noop';

/**
 * Quick (CI) runs, under a minute: every shape once, without the references, the Express Redis
 * rows and layered limits on Redis (each round starts a server per subject, and startup is most of
 * a quick run).
 */
export const inQuickRuns = (s: HttpSubject) =>
  !isReference(s) &&
  !(s.framework === 'express' && s.store === 'redis') &&
  !(s.shape === 'layered' && s.store === 'redis');

/** The bare app a subject's figures are divided by: the same framework under the same traffic. */
export const bareOf = (s: HttpSubject) =>
  s.shape === 'returning' ? `${s.framework}:bare:returning` : `${s.framework}:bare`;

/**
 * What a sluice subject is compared with head to head: the peer on the same framework, store and
 * traffic; for layered limits (no peer has them), sluice's own single limit on the same store.
 */
export const rivalOf = (s: HttpSubject): string | undefined => {
  if (s.limiter !== 'sluice') return undefined;
  if (s.shape === 'layered') return `${s.framework}:sluice:${s.store}`;
  return `${s.framework}:peer:${s.store}${s.shape === 'returning' ? ':returning' : ''}`;
};
