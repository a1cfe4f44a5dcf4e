import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/setup/sequencer.js';

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

/**
 * The release tier (`pnpm test:release`; `pnpm test` leaves it out). The rule: a file goes here
 * when its subject is a built artefact that a user installs or visits rather than the sources (the
 * packed tarballs and the registry's view of a package, the built dist as an app or another
 * runtime loads it, the documentation site and its pages built and read in Chromium), or when it
 * repeats, on a second major of a client, a scenario the first tier already runs on ioredis 5.
 * Everything else is the first tier (`pnpm test`): every behaviour suite against every store and
 * adapter from the sources, every client family at least once, with no build and no browser. A
 * new file is in the first tier unless it is listed here. test/architecture/test-tiers.test.ts
 * holds the split: each test file runs on ioredis 5 in exactly one tier, no file runs twice on
 * one client, and no first-tier file builds a package or drives Chromium.
 */
export const RELEASE_FILES = [
  // The packed tarballs installed with npm outside the workspace; the registry's view of each package.
  'test/consumer/consumer.test.ts',
  'test/consumer/packaging.test.ts',
  // The built dist: @sluice/hono on Bun, Deno and workerd; @sluice/server/client's entry point.
  'test/hono/runtimes/bun.test.ts',
  'test/hono/runtimes/deno.test.ts',
  'test/hono/runtimes/workerd.test.ts',
  'test/server/client-entry.test.ts',
  // The documentation site as VitePress builds it, and the playground's pages as Vite builds them
  // for it, read in Chromium (the simulators behind them run in the first tier: test/playground/).
  'test/docs/site.test.ts',
  'test/playground/playground.test.ts',
  'test/playground/adaptive-page.test.ts',
];

/**
 * Client suites whose ioredis 6 run is in the release tier: the HTTP fault scenarios (app
 * processes, Redis paused, killed, failed over), which the first tier runs on ioredis 5; ioredis
 * 6's reconnect paths still meet the same faults at the store in the first tier
 * (test/redis/faults.test.ts).
 */
const IOREDIS6_RELEASE = ['test/reliability/faults.test.ts'];

/** One project per client family of test/redis/client-family.ts, chosen by SLUICE_REDIS_CLIENT. */
const clientProject = (name: string, client: string, include: string[], exclude: string[] = []) => ({
  extends: true as const,
  test: {
    name,
    include,
    exclude: [...configDefaults.exclude, ...exclude],
    env: { SLUICE_REDIS_CLIENT: client },
  },
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
    // Which file starts when: the small projects first and \`ioredis\` (every file) last, the
    // longest files of each project first whether or not vitest has cached the last run's
    // durations (a clean clone has not), so that the run ends on short files on both processes
    // (test/setup/sequencer.ts says why).
    sequence: { sequencer: SlowFirstSequencer },
    // Two tiers, by project name: `pnpm test` runs every project but `release*` (every suite on
    // ioredis 5 from the sources, the client suites on ioredis 6, iovalkey and node-redis too),
    // `pnpm test:release` the `release*` ones; `pnpm vitest run` with no --project runs both.
    // One client: `pnpm vitest run --project ioredis6 test/redis`.
    projects: [
      clientProject('ioredis', 'ioredis', ['test/**/*.test.ts'], RELEASE_FILES),
      clientProject(
        'ioredis6',
        'ioredis6',
        CLIENT_SUITES.filter((file) => !IOREDIS6_RELEASE.includes(file)),
      ),
      clientProject('iovalkey', 'iovalkey', IOVALKEY_SUITES),
      clientProject('node-redis', 'node-redis', NODE_REDIS_SUITES),
      clientProject('release', 'ioredis', RELEASE_FILES),
      clientProject('release-ioredis6', 'ioredis6', IOREDIS6_RELEASE),
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
