import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url));

// Tests import the TypeScript sources directly: no build step before `pnpm test`.
export default defineConfig({
  resolve: {
    alias: {
      '@sluice/core': source('core'),
      '@sluice/redis': source('redis'),
      '@sluice/express': source('express'),
      '@sluice/fastify': source('fastify'),
      '@sluice/hono': source('hono'),
      '@sluice/koa': source('koa'),
      '@sluice/nestjs': source('nestjs'),
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
