/**
 * One app process for the reliability tests, bundled (test/setup/node-script.ts) and forked by
 * helpers.ts's `startApp`: an Express or Fastify server on a free loopback port, whose routes each carry their
 * own limits on their own store, described by the JSON in `SLUICE_APP` (see `AppConfig`). It
 * reports `{ type: 'ready', port }` over IPC, and answers `{ type: 'stats' }` with what the test
 * cannot see from outside: unhandled rejections, uncaught exceptions, store errors and breaker
 * states.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Algorithm,
  byIp,
  fixedWindow,
  gcra,
  MemoryStore,
  type Store,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import type { HttpLimit } from '@sluice/core/adapter';
import { rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import { type BreakerState, RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import express from 'express';
import Fastify, { type FastifyHttpOptions } from 'fastify';
import { Cluster, Redis, storeClient, storeClientReady } from '../redis/client-family.js';
import type {
  AlgorithmSpec,
  AppConfig,
  BackendSpec,
  ChildStats,
  RouteSpec,
  StoreEvent,
} from './app-config.js';

const config = JSON.parse(process.env.SLUICE_APP ?? '{}') as AppConfig;

const stats: ChildStats = {
  unhandled: [],
  uncaught: [],
  storeErrors: {},
  breaker: {},
  logs: {},
  events: {},
  clients: {},
};
process.on('unhandledRejection', (reason) => {
  stats.unhandled.push(String(reason));
});
process.on('uncaughtException', (error) => {
  stats.uncaught.push(String(error));
});

function algorithm(spec: AlgorithmSpec): Algorithm {
  switch (spec.kind) {
    case 'fixed-window':
      return fixedWindow(spec.options as never);
    case 'sliding-window-log':
      return slidingWindowLog(spec.options as never);
    case 'sliding-window-counter':
      return slidingWindowCounter(spec.options as never);
    case 'token-bucket':
      return tokenBucket(spec.options as never);
    case 'gcra':
      return gcra(spec.options as never);
  }
}

type Client = Redis | Cluster;
const clients = new Map<string, Client>();

async function connect(name: string, spec: BackendSpec): Promise<Client | undefined> {
  if (spec.kind === 'memory') return undefined;
  if (spec.kind === 'cluster' && spec.readme === true) {
    // The README's setup as written: no lazyConnect, nothing awaited; the store waits for it.
    const readme = new Cluster(
      spec.ports.map((port) => ({ host: '127.0.0.1', port })),
      { enableOfflineQueue: false, retryDelayOnFailover: 10, retryDelayOnClusterDown: 0 },
    );
    readme.on('error', () => {});
    clients.set(name, readme);
    return readme;
  }
  const common = { enableOfflineQueue: false, lazyConnect: true } as const;
  let client: Client;
  if (spec.kind === 'redis') client = new Redis({ ...common, host: '127.0.0.1', port: spec.port });
  else if (spec.kind === 'cluster')
    client = new Cluster(
      spec.ports.map((port) => ({ host: '127.0.0.1', port })),
      common,
    );
  else client = new Redis({ ...common, sentinels: spec.sentinels, name: spec.name });
  // A client's own 'error' events are expected while Redis is down; the store reports the calls.
  client.on('error', () => {});
  await client.connect();
  if (spec.kind !== 'sentinel') await storeClientReady(client);
  clients.set(name, client);
  return client;
}

function store(route: RouteSpec): Store {
  const backend = config.backends[route.backend]!;
  if (backend.kind === 'memory') return new MemoryStore();
  const client = clients.get(route.backend)!;
  const policy = route.failurePolicy;
  stats.storeErrors[route.path] = 0;
  const lines: string[] = [];
  const events: StoreEvent[] = [];
  if (route.log === true) {
    stats.logs[route.path] = lines;
    stats.events[route.path] = events;
  }
  return new RedisStore({
    client: storeClient(client),
    prefix: config.prefix,
    timeout: route.timeout ?? 100,
    ...(policy === undefined ? {} : { failurePolicy: policy === 'fallback' ? new MemoryStore() : policy }),
    ...(route.outageShare === undefined ? {} : { outageShare: route.outageShare }),
    breaker: route.breaker ?? { failures: 3, cooldown: 1000 },
    time: route.time ?? 'client',
    clock: () => Date.now() + (config.clockOffset ?? 0),
    // With `log`, the store's own log (what a user without onError sees: given a logger, the store
    // writes it with onError too), and every failure timed; else a count.
    ...(route.log === true
      ? {
          logger: {
            warn: (line: string) => {
              lines.push(line);
              events.push({ at: Date.now(), kind: 'log', text: line });
            },
          },
          onError: ({ operation, error, breaker }: RedisStoreErrorEvent) => {
            stats.storeErrors[route.path]! += 1;
            const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
            events.push({
              at: Date.now(),
              kind: 'error',
              text: `${operation}: ${message} (breaker ${breaker})`,
            });
          },
        }
      : {
          onError: () => {
            stats.storeErrors[route.path]! += 1;
          },
        }),
    onBreakerChange: (state: BreakerState, previous: BreakerState, node?: string) => {
      stats.breaker[route.path] = state;
      if (route.log === true)
        events.push({ at: Date.now(), kind: 'breaker', text: `${node ?? 'store'}: ${previous} -> ${state}` });
    },
  });
}

function limits<Req>(route: RouteSpec): HttpLimit<Req>[] {
  return route.limits.map((limit) => ({
    name: limit.name,
    algorithm: algorithm(limit.algorithm),
    // A header names the key ('x-key'), or the client address.
    key: limit.key === 'ip' ? byIp() : (req, access) => access.header(req, limit.key),
  }));
}

async function expressApp(): Promise<Server> {
  const app = express();
  if (config.trustProxy !== undefined) app.set('trust proxy', config.trustProxy);
  for (const route of config.routes) {
    app.get(
      route.path,
      rateLimit({ limits: limits(route), store: store(route), onError: () => {} }),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
  }
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

async function fastifyApp(): Promise<Server> {
  const options: FastifyHttpOptions<Server> = {};
  if (config.trustProxy !== undefined) options.trustProxy = config.trustProxy as string | boolean;
  const app = Fastify(options);
  await app.register(sluice, { global: false });
  for (const route of config.routes) {
    app.get(
      route.path,
      { onRequest: app.rateLimit({ limits: limits(route), store: store(route), onError: () => {} }) },
      async () => ({ ok: true }),
    );
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server;
}

for (const [name, spec] of Object.entries(config.backends)) await connect(name, spec);
const server = config.adapter === 'express' ? await expressApp() : await fastifyApp();

process.on('message', (message: { type: string }) => {
  if (message.type === 'stats') {
    for (const [name, client] of clients) stats.clients[name] = client.status;
    process.send?.({ type: 'stats', stats });
  }
});
process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port });
