import { defineConfig } from 'tsup';
import base from '../../tsup.base.js';

// Two entry points over one module graph: `@sluice/host` for apps, `@sluice/host/state` (the LMDB
// state layer) for sluice-server. Splitting keeps one copy of the shared modules.
export default defineConfig({
  ...base,
  entry: ['src/index.ts', 'src/state.ts'],
  splitting: true,
});
