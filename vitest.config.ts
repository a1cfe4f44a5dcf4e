import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url));

/**
 * The suites that talk to Redis through the client (store, Cluster, Sentinel, differential,
 * concurrency, faults): they run once per supported client. Everything else runs once, on ioredis 5.
 */
const REDIS_SUITES = [
  'test/redis/**/*.test.ts',
  'test/reliability/concurrency.test.ts',
  'test/reliability/faults.test.ts',
];

/**
 * The Redis suites node-redis runs: the store behaves the same on it (behaviour, differential,
 * refunds, leases, concurrency). The rest test ioredis' own behaviour (Cluster first burst, the
 * README's ioredis setup, client types) or drive the connection through the test's ioredis client.
 */
const NODE_REDIS_SUITES = [
  'test/redis/store-behaviour.test.ts',
  'test/redis/differential.test.ts',
  'test/redis/refund.test.ts',
  'test/redis/leases.test.ts',
  'test/reliability/concurrency.test.ts',
];

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
      '@sluice/core': source('core'),
      '@sluice/redis/gate': fileURLToPath(new URL('./packages/redis/src/gate.ts', import.meta.url)),
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
    // `pnpm test` runs all: every suite on ioredis 5, the Redis suites on ioredis 6 and iovalkey too.
    // One client: `pnpm vitest run --project ioredis6 test/redis`.
    projects: [
      clientProject('ioredis', ['test/**/*.test.ts']),
      clientProject('ioredis6', REDIS_SUITES),
      clientProject('iovalkey', REDIS_SUITES),
      clientProject('node-redis', NODE_REDIS_SUITES),
    ],
  },
});
