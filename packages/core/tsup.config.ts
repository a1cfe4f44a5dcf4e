import { defineConfig } from 'tsup';
import base from '../../tsup.base.js';

// Three entry points over one module graph: `@sluice/core` for apps, `@sluice/core/adapter` for
// adapters and stores, `@sluice/core/gate` for stores on a remote backend. Splitting in both
// formats puts the shared modules in one chunk, so a class is the same class whichever entry it
// was loaded through (`instanceof SluiceError`, `instanceof UtilizationShedder`), in CommonJS too.
export default defineConfig({
  ...base,
  entry: ['src/index.ts', 'src/adapter.ts', 'src/gate.ts'],
  splitting: true,
});
