import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url));

/**
 * What runs once per supported Redis client: the suites where clients differ. The wire (every
 * script through the client: each algorithm single, batched and lean, refunds, charges, leases,
 * blocks, SyncedStore's chunked syncs), errors (a hung, killed or restarted Redis, a Sentinel
 * failover, through the store and through HTTP apps), Cluster (routing, a breaker per shard) and
 * start-up (a fresh Cluster client's first burst). The rest is behaviour of the algorithms, of
 * core and of the stores' own logic, which the client only carries, or builds its own clients
 * (the README's ioredis setup, node-redis): it runs once, on ioredis 5 (project `ioredis`, which
 * runs every file).
 */
const CLIENT_SUITES = [
  'test/redis/store-behaviour.test.ts',
  'test/redis/redis-store.test.ts',
  'test/redis/refund.test.ts',
  'test/redis/charge.test.ts',
  'test/redis/leases.test.ts',
  'test/redis/block-shadow.test.ts',
  'test/redis/synced-store.test.ts',
  'test/redis/synced-refund.test.ts',
  'test/redis/faults.test.ts',
  'test/reliability/faults.test.ts',
  'test/redis/cluster-first-burst.test.ts',
  'test/redis/cluster-shards.test.ts',
  'test/redis/turn-cork.test.ts',
];

/**
 * The suites node-redis runs: another client architecture (RESP3 replies, its own pipelining), so
 * besides the store's behaviour on every script, the Lua twins' random traces (every reply shape)
 * and exactness under concurrency. The rest test ioredis' own behaviour (Cluster first burst, the
 * README's ioredis setup) or drive the connection through the test's ioredis client;
 * test/redis/node-redis.test.ts tests what only node-redis has.
 */
const NODE_REDIS_SUITES = [
  'test/redis/store-behaviour.test.ts',
  'test/redis/differential.test.ts',
  'test/redis/refund.test.ts',
  'test/redis/leases.test.ts',
  'test/reliability/concurrency.test.ts',
  'test/redis/turn-cork.test.ts',
];

/**
 * iovalkey is a fork of ioredis 5 (its connection, reconnect and offline-queue code are ioredis
 * 5.4's): it runs the client suites above except the end-to-end HTTP fault scenarios, whose
 * reconnect paths ioredis 5 (every file) and ioredis 6 already drive; test/redis/faults.test.ts
 * still runs the same faults on it at the store.
 */
const IOVALKEY_SUITES = CLIENT_SUITES.filter((file) => file !== 'test/reliability/faults.test.ts');

/** One project per client family of test/redis/client-family.ts, chosen by SLUICE_REDIS_CLIENT. */
const clientProject = (client: string, include: string[]) => ({
  extends: true as const,
  test: { name: client, include, env: { SLUICE_REDIS_CLIENT: client } },
});

// Tests import the TypeScript sources directly: no build step before `pnpm test`.
export default defineConfig({
  resolve: {
    alias: {
      '@sluice/core/adapter': fileURLToPath(new URL('./packages/core/src/adapter.ts', import.meta.url)),
      '@sluice/core/gate': fileURLToPath(new URL('./packages/core/src/gate.ts', import.meta.url)),
      '@sluice/core': source('core'),
      '@sluice/redis': source('redis'),
      '@sluice/express': source('express'),
      '@sluice/fastify': source('fastify'),
      '@sluice/server': source('server'),
      '@sluice/host/state': fileURLToPath(new URL('./packages/host/src/state.ts', import.meta.url)),
      '@sluice/host': source('host'),
      '@sluice/hono': source('hono'),
      '@sluice/koa': source('koa'),
      '@sluice/nestjs': source('nestjs'),
      '@sluice/otel': source('otel'),
    },
  },
  test: {
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Each test process runs file after file on one module graph rather than a new process per
    // file: a fork and its imports (Express, Fastify, Nest, ioredis, vite…) per file were about
    // half the suite's CPU. test/setup/fresh-file.ts clears what a new process would start
    // without (the once-per-process warnings); every file closes what it opens.
    isolate: false,
    setupFiles: ['test/setup/fresh-file.ts'],
    // Two files at a time on the 2-core machine (vitest's default is cores - 1, one file at a
    // time): many files wait on Redis, app processes or a fault, and the other file uses the CPU
    // meanwhile. Three were slower here, and pushed the load past 9.
    maxWorkers: 2,
    // `pnpm test` runs all: every suite on ioredis 5, the client suites on ioredis 6 and iovalkey too.
    // One client: `pnpm vitest run --project ioredis6 test/redis`.
    projects: [
      clientProject('ioredis', ['test/**/*.test.ts']),
      clientProject('ioredis6', CLIENT_SUITES),
      clientProject('iovalkey', IOVALKEY_SUITES),
      clientProject('node-redis', NODE_REDIS_SUITES),
      {
        // The public API's type tests (test/types/*.test-d.ts, expectTypeOf and @ts-expect-error):
        // vitest's typecheck mode runs tsc on them and what they import, no test process and no
        // Redis (~15 s of CPU from cold, incremental after). `pnpm typecheck` checks them too.
        test: {
          name: 'types',
          include: [],
          typecheck: {
            enabled: true,
            only: true,
            include: ['test/types/**/*.test-d.ts'],
            tsconfig: 'test/types/tsconfig.json',
          },
        },
      },
    ],
  },
});
