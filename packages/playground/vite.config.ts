import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * The page imports @sluice/core from its TypeScript sources (as the tests do: no build of core
 * first). Core imports no Node built-in, so the browser needs no stand-ins.
 */
export default defineConfig({
  root: here('.'),
  base: './',
  resolve: {
    alias: [
      { find: /^@sluice\/core$/, replacement: here('../core/src/index.ts') },
      { find: /^@sluice\/core\/adapter$/, replacement: here('../core/src/adapter.ts') },
    ],
  },
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    // Two pages: the rate-limit playground and the adaptive concurrency simulator.
    rollupOptions: { input: { main: here('index.html'), adaptive: here('adaptive.html') } },
  },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
});
