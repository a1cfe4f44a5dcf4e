import { defineConfig } from 'tsup';
import base from '../../tsup.base.js';

// Two entry points over one module graph: `@sluice/redis` for apps, `@sluice/redis/gate` (the
// failure handling) for ServerStore. Splitting keeps one copy of the shared modules.
export default defineConfig({
  ...base,
  entry: ['src/index.ts', 'src/gate.ts'],
  splitting: true,
});
